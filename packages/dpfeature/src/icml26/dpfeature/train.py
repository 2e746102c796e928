"""Full-batch trainers: GD, NoisyGD (the paper's Eq. 3, non-formal) and clipped DP-GD.

- ``"gd"``: W ← W − η ∇L_S(W) (Cao et al. 2022).
- ``"noisy_gd"``: W ← W − η (∇L_S(W) + N(0, σ_dp² I)) with **no per-example clipping**, as
  the paper writes it (reviewer 4 quoting Eq. 3). σ_dp = z Δ_t / n with the tracked
  sensitivity Δ_t = max_i ‖∇ℓ_i(W_t)‖: the paper bounds Δ by a data-dependent
  high-probability lemma (Lemma 4.4), so this variant is **not formally DP**; z is the
  noise multiplier that would make T steps (ε, δ)-DP if Δ_t were a true bound.
- ``"dp_gd"``: W ← W − η ((1/n) Σ_i clip_C(∇ℓ_i) + N(0, (z C / n)² I)), formally (ε, δ)-DP
  for T steps under add/remove-one neighbours (Abadi et al. 2016 at sampling rate 1).

z is calibrated to (ε, δ, T) on the exact Gaussian-composition curve
(:func:`~icml26.dpfeature.accounting.noise_multiplier`). Every leading axis of the data is a
batch of independent runs (settings × seeds) trained in one vectorised loop; each run
stops by its own :class:`~icml26.shared.Plateau` on its training loss (cap T). A run whose
loss or weights become non-finite is stopped, flagged ``diverged`` and keeps its last
finite weights. The achieved ε of the steps actually taken is reported next to the
budgeted one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from icml26.dpfeature.accounting import (
    check_delta,
    check_epsilon,
    check_steps,
    gaussian_epsilon,
    noise_multiplier,
)
from icml26.dpfeature.data import MultiPatch, check_labels
from icml26.dpfeature.dynamics import Decomposer
from icml26.dpfeature.model import check_q
from icml26.dpfeature.persample import (
    clipped_mean_gradient,
    gram,
    loss_coefficients,
    mean_gradient,
    per_sample_gradients_vmap,
    per_sample_norms,
)
from icml26.shared import Plateau

__all__ = ["METHODS", "TrainConfig", "TrainResult", "evaluate", "train"]

METHODS = ("gd", "noisy_gd", "dp_gd")


@dataclass(frozen=True)
class TrainConfig:
    """One trainer. ``steps`` is the cap T (and the T the noise is calibrated for)."""

    method: str = "gd"
    eta: float = 0.5
    steps: int = 1000
    epsilon: float | None = None
    delta: float = 1e-5
    clip: float = 1.0
    q: float = 3.0
    record_every: int = 10
    # the convergence rule on the training loss: windows of `window` steps
    window: int = 50
    patience: int = 4
    min_delta: float = 1e-3
    engine: str = "fused"  # "fused" (closed-form per-example terms) or "vmap" (torch.func)
    # a given noise multiplier instead of the one calibrated to (ε, δ, T); 0 = no noise
    z: float | None = None

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        check_steps(self.steps)
        check_q(self.q)
        if not (isinstance(self.eta, int | float) and math.isfinite(self.eta) and self.eta > 0):
            raise ValueError(f"eta must be positive, got {self.eta!r}")
        if self.method != "gd":
            if self.epsilon is None:
                raise ValueError(f"method {self.method!r} needs epsilon")
            check_epsilon(self.epsilon)
            check_delta(self.delta)
        if not (isinstance(self.clip, int | float) and math.isfinite(self.clip) and self.clip > 0):
            raise ValueError(f"clip C must be positive, got {self.clip!r}")
        if self.engine not in ("fused", "vmap"):
            raise ValueError(f"engine must be 'fused' or 'vmap', got {self.engine!r}")
        if self.z is not None and not (math.isfinite(self.z) and self.z >= 0):
            raise ValueError(f"z must be a non-negative noise multiplier, got {self.z!r}")
        if isinstance(self.record_every, bool) or self.record_every < 1:
            raise ValueError(f"record_every must be >= 1, got {self.record_every!r}")

    @property
    def label(self) -> str:
        name = {"gd": "GD", "noisy_gd": "NoisyGD", "dp_gd": "DP-GD"}[self.method]
        return name if self.epsilon is None or self.method == "gd" else f"{name} ε={self.epsilon:g}"

    @property
    def noise_multiplier(self) -> float:
        """z for (ε, δ, T); 0 for GD."""
        if self.method == "gd":
            return 0.0
        if self.z is not None:
            return float(self.z)
        return noise_multiplier(self.epsilon, self.delta, self.steps)


@dataclass
class TrainResult:
    """Final weights (B, 2, m, d), per-run stopping and privacy, and the tracked history.

    ``history`` holds tensors (B, K) over the K recorded steps ``record_steps``: training
    ``loss``, ``signal`` (max γ), ``memorisation`` (max ρ̄), ``sensitivity`` (max_i ‖∇ℓ_i‖).
    """

    w: torch.Tensor
    w0: torch.Tensor
    config: TrainConfig
    steps: list[int]
    stop: list[dict]
    diverged: list[bool]
    z: float
    epsilon: list[float]
    record_steps: list[int] = field(default_factory=list)
    history: dict[str, torch.Tensor] = field(default_factory=dict)


def _spent(cfg: TrainConfig, z: float, steps: int) -> float:
    """ε spent by ``steps`` updates (inf for a private method run without noise)."""
    if cfg.method == "gd" or steps == 0:
        return 0.0
    return gaussian_epsilon(z, steps, cfg.delta) if z > 0 else math.inf


def _flatten(data: MultiPatch) -> tuple[MultiPatch, tuple[int, ...]]:
    batch = tuple(data.x.shape[:-3])
    b = math.prod(batch) if batch else 1
    return (
        MultiPatch(
            data.x.reshape(b, *data.x.shape[-3:]),
            data.y.reshape(b, -1),
            data.mu.reshape(b, -1),
            data.noise.reshape(b, *data.noise.shape[-3:]),
            data.signal_patch.reshape(b, -1),
            data.sigma_p,
        ),
        batch,
    )


def _vmap_terms(
    w: torch.Tensor, x: torch.Tensor, y: torch.Tensor, q: float, clip: float | None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Losses, (clipped) mean gradient and per-example norms from torch.func per-example grads."""
    grads = per_sample_gradients_vmap(w, x, y, q)  # (B, n, 2, m, d)
    norms = grads.flatten(-3).norm(dim=-1)
    if clip is not None:
        grads = grads * (clip / norms.clamp_min(1e-30)).clamp(max=1.0)[..., None, None, None]
    loss, _ = loss_coefficients(w, x, y, q)
    return loss, grads.mean(-4), norms


def train(
    data: MultiPatch,
    w0: torch.Tensor,
    config: TrainConfig,
    *,
    generator: torch.Generator | None = None,
) -> TrainResult:
    """Train every run of the (batched) ``data`` from ``w0`` with one method.

    ``data.x`` (..., n, P, d) and ``w0`` (..., 2, m, d) share their leading axes; the
    result is flattened to one batch axis B.
    """
    flat, batch = _flatten(data)
    check_labels(flat.y)
    w0 = w0.reshape(-1, *w0.shape[-3:])
    if w0.shape[0] != flat.x.shape[0] or w0.shape[-1] != flat.x.shape[-1]:
        raise ValueError(
            f"w0 {tuple(w0.shape)} does not match the data's batch {batch} and d = {flat.d}"
        )
    x, y = flat.x.to(w0.dtype), flat.y.to(w0.dtype)
    b, n = x.shape[0], x.shape[-3]
    cfg = config
    z = cfg.noise_multiplier
    k = gram(x)
    tracker = Decomposer(flat.mu.to(w0.dtype), flat.noise.to(w0.dtype), y)
    # T updates read T + 1 losses (W_0 … W_T): the rule's cap counts readings
    rules = [Plateau(cfg.window, cfg.patience, cfg.min_delta, cfg.steps + 1) for _ in range(b)]
    active = torch.ones(b, dtype=torch.bool, device=w0.device)
    diverged = [False] * b
    w = w0.clone()
    hist: dict[str, list[torch.Tensor]] = {
        "loss": [],
        "signal": [],
        "memorisation": [],
        "sensitivity": [],
    }
    record_steps: list[int] = []

    def record(step: int, loss: torch.Tensor, sens: torch.Tensor) -> None:
        gamma, rho = tracker.coefficients(w, w0)
        sig = gamma.amax((-1, -2))
        own = tracker.own[:, :, None, :].expand_as(rho)
        mem = torch.where(own, rho, torch.full_like(rho, -torch.inf)).amax((-1, -2, -3))
        record_steps.append(step)
        for key, val in (("loss", loss), ("signal", sig), ("memorisation", mem)):
            hist[key].append(val.detach().cpu())
        hist["sensitivity"].append(sens.detach().cpu())

    for step in range(cfg.steps + 1):
        if cfg.engine == "fused":
            losses, coef = loss_coefficients(w, x, y, cfg.q)
            if cfg.method != "gd" or step % cfg.record_every == 0:
                norms = per_sample_norms(coef, k)
            if cfg.method == "dp_gd":
                g = clipped_mean_gradient(coef, x, norms, cfg.clip)
            else:
                g = mean_gradient(coef, x)
        else:
            losses, g, norms = _vmap_terms(
                w, x, y, cfg.q, cfg.clip if cfg.method == "dp_gd" else None
            )
        loss = losses.mean(-1)
        sens = norms.amax(-1)
        if step % cfg.record_every == 0:
            record(step, loss, sens)
        # the convergence rule reads the loss at W_t; runs that stop keep W_t
        for i in torch.nonzero(active).flatten().tolist():
            try:
                if rules[i].update(float(loss[i])):
                    active[i] = False
            except FloatingPointError:
                diverged[i], active[i] = True, False
                rules[i].reason = "diverged"
        if not active.any():
            break
        if cfg.method == "noisy_gd":
            sd = z * sens / n
        elif cfg.method == "dp_gd":
            sd = torch.full((b,), z * cfg.clip / n, dtype=w.dtype, device=w.device)
        else:
            sd = None
        if sd is not None:
            where = generator.device if generator is not None else w.device
            noise = torch.randn(w.shape, generator=generator, dtype=w.dtype, device=where)
            noise = noise.to(w.device)
            g = g + sd[:, None, None, None] * noise
        new = w - cfg.eta * g
        finite = torch.isfinite(new).flatten(1).all(1)
        for i in torch.nonzero(active & ~finite).flatten().tolist():
            diverged[i], active[i] = True, False
            rules[i].reason = "diverged"
        w = torch.where(active[:, None, None, None], new, w)
        if not active.any():
            break
    steps = [max(r.steps - 1, 0) for r in rules]  # updates applied
    eps = [_spent(cfg, z, s) for s in steps]
    history = {key: torch.stack(v, 1) for key, v in hist.items()} if record_steps else {}
    return TrainResult(
        w=w,
        w0=w0,
        config=cfg,
        steps=steps,
        stop=[r.summary() for r in rules],
        diverged=diverged,
        z=z,
        epsilon=eps,
        record_steps=record_steps,
        history=history,
    )


def evaluate(
    w: torch.Tensor, x: torch.Tensor, y: torch.Tensor, q: float = 3.0, chunk: int = 2000
) -> tuple[torch.Tensor, torch.Tensor]:
    """Test error and mean logistic loss of W (2, m, d) on x (n, P, d), y (n,) ±1.

    Computed in float64 (so the huge weights of a diverged run still give finite outputs
    where they can); a non-finite output counts as an error and the loss is capped at 1e6,
    so a diverged run reads as chance or worse, never as NaN."""
    from icml26.dpfeature.model import forward, logistic_loss

    y = check_labels(y)
    errs, losses = [], []
    with torch.no_grad():
        for s in range(0, x.shape[0], chunk):
            f = forward(w.double(), x[s : s + chunk].double(), q)
            margin = y[s : s + chunk].double() * f
            ok = torch.isfinite(margin)
            errs.append(((margin <= 0) | ~ok).float())
            losses.append(torch.where(ok, logistic_loss(margin), 1e6).clamp(max=1e6))
    return torch.cat(errs).mean().to(w.dtype), torch.cat(losses).mean().to(w.dtype)
