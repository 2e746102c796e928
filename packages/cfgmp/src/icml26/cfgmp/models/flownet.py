"""A small conditional flow-matching network, its training, and safetensors checkpoints.

:class:`ConditionalVelocityMLP` predicts ``v(x, t, y)`` for flat inputs (e.g. 8×8
digits as 64 numbers). The label embedding has one extra "null" token
(index ``num_classes``) for the unconditional prediction; training replaces each
label by it with probability ``label_dropout`` (classifier-free guidance training,
Ho & Salimans, 2022). The loss is conditional flow matching with the linear
interpolant (Lipman et al., 2023): ``‖v_θ(t·x1 + (1 − t)·x0, t, y) − (x1 − x0)‖²``,
``t ~ U(0, 1)``, ``x0 ~ N(0, I)``.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file
from torch import Tensor, nn

from icml26.cfgmp.models.adam import Adam
from icml26.shared.progress import progress

log = logging.getLogger(__name__)

__all__ = [
    "ConditionalVelocityMLP",
    "FlowNetConfig",
    "load_flow_model",
    "save_flow_model",
    "train_flow_matching",
]


@dataclass(frozen=True)
class FlowNetConfig:
    """Architecture of :class:`ConditionalVelocityMLP` (stored next to the weights)."""

    dim: int
    num_classes: int
    hidden: int = 256
    depth: int = 3
    time_features: int = 32
    label_features: int = 32


def _time_embedding(t: Tensor, features: int) -> Tensor:
    """Sinusoidal features of ``t`` ∈ [0, 1], angular frequencies π·(1 … 100)."""
    half = features // 2
    freqs = math.pi * torch.exp(torch.linspace(0.0, math.log(100.0), half, device=t.device))
    angles = t[:, None].float() * freqs[None]
    return torch.cat([angles.sin(), angles.cos()], dim=1)


class ConditionalVelocityMLP(nn.Module):
    """``v_θ(x, t, y)``: an MLP on ``[x, emb(t), emb(y)]`` with SiLU activations.

    Call as a velocity model: ``net(x, t, y)`` with ``y`` a ``(B,)`` label tensor or
    ``None`` (unconditional; the null token).
    """

    def __init__(self, config: FlowNetConfig):
        super().__init__()
        if config.dim < 1 or config.num_classes < 1 or config.hidden < 1 or config.depth < 1:
            raise ValueError(f"invalid network config: {config}")
        self.config = config
        self.label_embedding = nn.Embedding(config.num_classes + 1, config.label_features)
        width_in = config.dim + config.time_features + config.label_features
        layers: list[nn.Module] = []
        for i in range(config.depth):
            layers += [nn.Linear(width_in if i == 0 else config.hidden, config.hidden), nn.SiLU()]
        layers.append(nn.Linear(config.hidden, config.dim))
        self.mlp = nn.Sequential(*layers)

    @property
    def null_label(self) -> int:
        return self.config.num_classes

    def _labels(self, y: Any, batch: int, device: torch.device) -> Tensor:
        if y is None:
            return torch.full((batch,), self.null_label, dtype=torch.long, device=device)
        y = torch.as_tensor(y, device=device).long()
        if y.shape != (batch,):
            raise ValueError(f"labels must have shape ({batch},), got {tuple(y.shape)}")
        if y.min() < 0 or y.max() > self.null_label:
            raise ValueError(f"labels must lie in 0..{self.null_label} (the null token)")
        return y

    def forward(self, x: Tensor, t: Tensor, y: Any = None) -> Tensor:
        if x.ndim != 2 or x.shape[1] != self.config.dim:
            raise ValueError(f"x must be (B, {self.config.dim}), got {tuple(x.shape)}")
        p = next(self.parameters())
        t = torch.as_tensor(t, device=p.device)
        if t.ndim == 0:
            t = t.expand(x.shape[0])
        if t.shape != (x.shape[0],):
            raise ValueError(f"t must be a scalar or ({x.shape[0]},), got {tuple(t.shape)}")
        h = torch.cat(
            [
                x.to(p.dtype),
                _time_embedding(t.to(p.device), self.config.time_features).to(p.dtype),
                self.label_embedding(self._labels(y, x.shape[0], p.device)),
            ],
            dim=1,
        )
        return self.mlp(h).to(x.dtype)

    def velocity_pair(
        self, x: Tensor, t: Tensor, cond: Any, null_cond: Any = None
    ) -> tuple[Tensor, Tensor]:
        """Conditional and unconditional velocities in one batched forward pass."""
        b = x.shape[0]
        y_c = self._labels(cond, b, x.device)
        y_u = self._labels(null_cond, b, x.device)
        v = self(torch.cat([x, x]), torch.cat([t, t]), torch.cat([y_c, y_u]))
        return v[:b], v[b:]


def train_flow_matching(
    model: ConditionalVelocityMLP,
    data: Tensor,
    labels: Tensor,
    *,
    steps: int = 2000,
    batch_size: int = 256,
    lr: float = 2e-3,
    label_dropout: float = 0.15,
    generator: torch.Generator | None = None,
    plateau_window: int | None = None,
    patience: int = 3,
    rel_tol: float = 0.01,
    lr_decays: int = 2,
) -> list[float]:
    """Train ``model`` by conditional flow matching; returns the loss per step.

    Minibatches, times, noise and label dropout are all drawn from ``generator`` (on
    the CPU), so a seed fixes the run. Two schedules:

    - ``plateau_window=None``: exactly ``steps`` steps of Adam with a cosine decay;
    - ``plateau_window=W``: a convergence rule on the training loss, with ``steps`` as
      the cap. The loss is averaged over windows of ``W`` steps (the per-batch loss of
      flow matching is noisy: random times and noise); when ``patience`` windows in a
      row fail to lower the best window mean by ``rel_tol`` (relative), the learning
      rate is halved (reduce on plateau) and the count restarts; at the
      ``lr_decays + 1``-th plateau training stops.
    """
    if data.ndim != 2 or data.shape[1] != model.config.dim:
        raise ValueError(f"data must be (N, {model.config.dim}), got {tuple(data.shape)}")
    if labels.shape != (data.shape[0],):
        raise ValueError(f"labels must be ({data.shape[0]},), got {tuple(labels.shape)}")
    if not 0.0 <= label_dropout < 1.0:
        raise ValueError(f"label_dropout must lie in [0, 1), got {label_dropout}")
    if steps < 1 or batch_size < 1:
        raise ValueError("steps and batch_size must be positive")
    if plateau_window is not None and (plateau_window < 1 or patience < 1 or lr_decays < 0):
        raise ValueError("plateau_window and patience must be positive, lr_decays >= 0")
    device = next(model.parameters()).device
    gen = generator if generator is not None else torch.Generator().manual_seed(0)
    opt = Adam(model.parameters(), lr=lr, total_steps=None if plateau_window else steps)
    n = data.shape[0]
    losses: list[float] = []
    best, stale, plateaus = math.inf, 0, 0
    model.train()
    for step in progress(range(steps), desc="flow matching", leave=False):
        idx = torch.randint(0, n, (batch_size,), generator=gen)
        x1 = data[idx].to(device)
        y = labels[idx].clone()
        drop = torch.rand(batch_size, generator=gen) < label_dropout
        y[drop] = model.null_label
        x0 = torch.randn(x1.shape, generator=gen).to(device, x1.dtype)
        t = torch.rand(batch_size, generator=gen).to(device, x1.dtype)
        xt = t[:, None] * x1 + (1 - t[:, None]) * x0
        loss = ((model(xt, t, y.to(device)) - (x1 - x0)) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
        if plateau_window and (step + 1) % plateau_window == 0:
            mean = sum(losses[-plateau_window:]) / plateau_window
            if mean < best * (1.0 - rel_tol):
                best, stale = mean, 0
            else:
                stale += 1
            if stale >= patience:
                plateaus += 1
                if plateaus > lr_decays:
                    break
                opt.lr *= 0.5
                stale = 0
    model.eval()
    log.info("flow matching: %d steps, final loss %.4f", len(losses), losses[-1])
    return losses


def save_flow_model(model: ConditionalVelocityMLP, path: str | Path) -> Path:
    """Write ``<path>.safetensors`` (weights) and ``<path>.json`` (architecture)."""
    path = Path(path).with_suffix("")
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(path.with_suffix(".safetensors")))
    path.with_suffix(".json").write_text(json.dumps(asdict(model.config), indent=2))
    return path.with_suffix(".safetensors")


def load_flow_model(path: str | Path, device: Any = "cpu") -> ConditionalVelocityMLP:
    """Load a model written by :func:`save_flow_model` (no pickle involved)."""
    path = Path(path).with_suffix("")
    weights, meta = path.with_suffix(".safetensors"), path.with_suffix(".json")
    if not weights.is_file() or not meta.is_file():
        raise FileNotFoundError(f"need {weights.name} and {meta.name} in {path.parent}")
    try:
        config = FlowNetConfig(**json.loads(meta.read_text()))
    except (TypeError, json.JSONDecodeError) as err:
        raise ValueError(f"{meta} is not a flow-network config: {err}") from err
    model = ConditionalVelocityMLP(config)
    model.load_state_dict(load_file(str(weights), device="cpu"))
    return model.to(device).eval()
