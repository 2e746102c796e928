"""The segment advantage model A_φ(τ) = Σ_t A_φ(s_t, a_t), learnt from segment preferences.

Preference model (the regret/advantage model of Knox et al., as in the paper [read]):
P[τ¹ ≻ τ²] = σ(A_φ(τ¹) − A_φ(τ²)), trained by binary cross-entropy
L = −(1/n) Σ_i [y_i log σ(Δ_i) + (1 − y_i) log σ(−Δ_i)], Δ_i = A_φ(τ¹_i) − A_φ(τ²_i),
with the best state chosen by held-out preference accuracy (early stopping [read]) and
training stopped by a plateau of the training loss (house rule).

A_φ is an MLP on (s_t, a_t) summed over the segment, or an encoder-only Transformer whose
per-token outputs are summed ([inferred]). The rule the paper insists on is enforced by a
guard: :meth:`SegmentAdvantage.segment` refuses single steps and segments whose length or
cut grid differs from the training segments. :meth:`SegmentAdvantage.per_step` exists
only for the per-step ablation and P-IQL's relabelling, which is exactly the mismatch the
paper diagnoses. With ``AdvantageConfig(normalize_obs=True)`` the observations are
z-scored with the statistics of the training pairs' segments (not the held-out split),
stored in the model (:class:`~icml26.paws.networks.ObsNorm`).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from icml26.paws.networks import Adam, ObsNorm, SegmentTransformer, default_device, mlp
from icml26.paws.preferences import SegmentPairs
from icml26.shared import Plateau

__all__ = ["AdvantageConfig", "AdvantageFit", "SegmentAdvantage", "fit_advantage", "preference_bce"]


class SegmentAdvantage(nn.Module):
    """A_φ with its training segment length ``length`` and cut grid ``alignment``."""

    def __init__(
        self,
        obs_dim: int,
        act_dim: int,
        length: int,
        *,
        kind: Literal["mlp", "transformer"] = "mlp",
        hidden: tuple[int, ...] = (64, 64),
        alignment: int | None = None,
    ):
        super().__init__()
        if kind not in ("mlp", "transformer"):
            raise ValueError(f"kind must be 'mlp' or 'transformer', got {kind!r}")
        self.kind, self.length, self.alignment = kind, int(length), alignment
        self.obs_dim, self.act_dim = int(obs_dim), int(act_dim)
        n_in = obs_dim + act_dim
        self.net: nn.Module = (
            mlp(n_in, 1, hidden) if kind == "mlp" else SegmentTransformer(n_in, self.length)
        )
        self.obs_norm = ObsNorm(obs_dim)

    def _tokens(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([self.obs_norm(obs), act], dim=-1)).squeeze(-1)

    def forward(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        """Segment sums A_φ(τ) of (B, N, ·) segments (no guard: the training path)."""
        return self._tokens(obs, act).sum(dim=-1)

    def _check(self, obs, act, start) -> None:
        if obs.ndim < 3:
            raise ValueError(
                "A_φ is queried on whole segments only (B, N, obs_dim); got a single step "
                f"of shape {tuple(obs.shape)} — per-step queries reintroduce the train/"
                "inference mismatch (use per_step() only for the ablation)"
            )
        if obs.shape[-2] != self.length or act.shape[-2] != self.length:
            raise ValueError(
                f"segments must be cut like the training segments: length {self.length}, "
                f"got {obs.shape[-2]}"
            )
        if obs.shape[:-1] != act.shape[:-1]:
            raise ValueError(f"obs {tuple(obs.shape)} and act {tuple(act.shape)} disagree")
        if start is not None and self.alignment is not None:
            st = np.asarray(start).reshape(-1)
            off = st % self.alignment
            if np.any(off != 0):
                raise ValueError(
                    f"segments must be cut on the training grid (starts ≡ 0 mod "
                    f"{self.alignment}); {int(np.count_nonzero(off))} start(s) are re-cut"
                )

    def _tensor(self, x) -> torch.Tensor:
        dev = next(self.parameters()).device
        t = torch.as_tensor(np.asarray(x, dtype=np.float32) if not torch.is_tensor(x) else x)
        t = t.to(dev, torch.float32)
        if not torch.all(torch.isfinite(t)):
            raise ValueError("segments contain NaN or inf")
        return t

    @torch.no_grad()
    def segment(self, obs, act, start=None) -> np.ndarray:
        """A_φ(τ) of whole segments ``obs`` (B, N, d), ``act`` (B, N, a); ``start`` (B,)
        is checked against the training grid when given."""
        o, a = self._tensor(obs), self._tensor(act)
        self._check(o, a, start)
        return self(o, a).double().cpu().numpy()

    @torch.no_grad()
    def per_step(self, obs, act) -> np.ndarray:
        """A_φ(s_t, a_t) of every step (the per-step ablation only; MLP only)."""
        if self.kind != "mlp":
            raise ValueError("per-step values exist only for the MLP A_φ")
        o, a = self._tensor(obs), self._tensor(act)
        return self._tokens(o, a).double().cpu().numpy()


def preference_bce(adv_first: torch.Tensor, adv_second: torch.Tensor, label: torch.Tensor):
    """BCE of σ(A(τ¹) − A(τ²)) against the label P[τ¹ ≻ τ²]."""
    return F.binary_cross_entropy_with_logits(adv_first - adv_second, label)


@dataclass(frozen=True)
class AdvantageConfig:
    kind: Literal["mlp", "transformer"] = "mlp"
    hidden: tuple[int, ...] = (64, 64)
    lr: float = 1e-3
    weight_decay: float = 1e-4
    batch_pairs: int = 64
    val_fraction: float = 0.2
    val_patience: int = 30  # epochs without a better held-out accuracy
    plateau_window: int = 25  # minibatches per loss window
    plateau_patience: int = 8
    plateau_min_delta: float = 0.01
    cap: int = 3000  # gradient steps
    normalize_obs: bool = False  # z-score observations with the training pairs' statistics


@dataclass
class AdvantageFit:
    model: SegmentAdvantage
    val_accuracy: float
    train_accuracy: float
    epochs: int
    best_epoch: int
    stopped_by: str
    plateau: dict = field(default_factory=dict)
    losses: list[float] = field(default_factory=list)


def _accuracy(model: SegmentAdvantage, o: torch.Tensor, a: torch.Tensor, y: torch.Tensor) -> float:
    with torch.no_grad():
        d = model(o[:, 0], a[:, 0]) - model(o[:, 1], a[:, 1])
    keep = y != 0.5
    if not torch.any(keep):
        return float("nan")
    return float(((d[keep] > 0).float() == y[keep]).float().mean())


def fit_advantage(
    pairs: SegmentPairs,
    config: AdvantageConfig | None = None,
    *,
    seed: int = 0,
    device: str | torch.device | None = None,
    model: nn.Module | None = None,
) -> AdvantageFit:
    """Train A_φ on ``pairs`` by the preference BCE; returns the best held-out state.

    ``model`` replaces A_φ by another segment scorer ``model(obs, act) -> (B,)`` trained by
    the same loss and stopping rules (the Preference Transformer baseline uses it)."""
    if not isinstance(pairs, SegmentPairs):
        raise TypeError(f"pairs must be SegmentPairs, got {type(pairs).__name__}")
    c = config or AdvantageConfig()
    dev = default_device(device)
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    n = len(pairs)
    perm = torch.randperm(n, generator=gen).numpy()
    n_val = round(c.val_fraction * n) if n >= 10 else 0
    val_idx, tr_idx = perm[:n_val], perm[n_val:]
    obs = torch.as_tensor(pairs.obs, device=dev)
    act = torch.as_tensor(pairs.act, device=dev)
    y = torch.as_tensor(pairs.label, device=dev)
    if model is None:
        model = SegmentAdvantage(
            pairs.obs_dim, pairs.act_dim, pairs.length, kind=c.kind, hidden=c.hidden,
            alignment=pairs.alignment,
        )  # fmt: skip
    if c.normalize_obs:
        norm = getattr(model, "obs_norm", None)
        if not isinstance(norm, ObsNorm):
            raise ValueError("normalize_obs needs a model with an `obs_norm` (ObsNorm) module")
        norm.fit(pairs.obs[tr_idx])  # the training split only, never the held-out pairs
    model = model.to(dev)
    # AdamW's update (decoupled weight decay), bit-identical to torch.optim.AdamW
    opt = Adam(model.parameters(), lr=c.lr, weight_decay=c.weight_decay)
    rule = Plateau(c.plateau_window, c.plateau_patience, c.plateau_min_delta, c.cap)
    tr = torch.as_tensor(tr_idx, device=dev)
    va = torch.as_tensor(val_idx, device=dev)
    best, best_state, best_epoch, stale, epoch = -1.0, None, 0, 0, 0
    losses: list[float] = []
    stopped_by = "cap"
    while not rule.stopped:
        epoch += 1
        order = tr[torch.randperm(tr.numel(), generator=gen).to(dev)]
        for i in range(0, order.numel(), c.batch_pairs):
            b = order[i : i + c.batch_pairs]
            loss = preference_bce(model(obs[b, 0], act[b, 0]), model(obs[b, 1], act[b, 1]), y[b])
            opt.zero_grad()
            loss.backward()
            opt.step()
            value = float(loss.detach())
            losses.append(value)
            if rule.update(value):
                stopped_by = rule.reason or "cap"
                break
        ref = va if n_val else tr
        acc = _accuracy(model, obs[ref], act[ref], y[ref])
        acc = -1.0 if np.isnan(acc) else acc
        if acc > best:
            best, best_state, best_epoch, stale = acc, copy.deepcopy(model.state_dict()), epoch, 0
        else:
            stale += 1
        if n_val and stale >= c.val_patience and not rule.stopped:
            stopped_by = "held-out accuracy"
            break
    if best_state is not None:
        model.load_state_dict(best_state)
    model.eval()
    return AdvantageFit(
        model=model,
        val_accuracy=best if n_val else float("nan"),
        train_accuracy=_accuracy(model, obs[tr], act[tr], y[tr]),
        epochs=epoch,
        best_epoch=best_epoch,
        stopped_by=stopped_by,
        plateau=rule.summary(),
        losses=losses,
    )
