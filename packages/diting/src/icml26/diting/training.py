"""Training every torch regressor of the package (DITING and the BatteryLife baselines).

Samples follow BatteryLife: a sample is (cell, window length i), the mask keeps the first i
cycles, the label is the cell's EOL standardised on the training cells. Each epoch draws
``windows_per_cell`` window lengths per training cell (uniform in ``[min_window, T]``).
Training stops by :class:`icml26.shared.Plateau` on the epoch-mean training loss. Under a
launcher (``torchrun``) each rank takes its shard of one seeded sample order, gradients are
averaged across ranks (gloo/NCCL all-reduce) and the loss the rule sees is the global mean.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from icml26.diting.data import Fleet, LabelScaler, window_mask
from icml26.shared import Plateau

log = logging.getLogger(__name__)

__all__ = ["TrainConfig", "TrainResult", "dense_weights", "predict", "train_regressor"]


@dataclass(frozen=True)
class TrainConfig:
    lr: float = 3e-3
    weight_decay: float = 0.0
    batch_size: int = 32
    windows_per_cell: int = 4
    min_window: int = 10
    grad_clip: float = 1.0
    kde_alpha: float | None = None  # DenseWeight α (BatteryLife's optional KDE weights)
    plateau_window: int = 1  # epochs averaged per window
    patience: int = 6
    min_delta: float = 0.01
    max_epochs: int = 80  # the cap


@dataclass
class TrainResult:
    losses: list[float]
    stopping: dict
    scaler: LabelScaler
    samples: list[tuple[int, int]] = field(default_factory=list)  # (cell, window) this rank saw
    world_size: int = 1
    unconverged_sinkhorn: int = 0


def dense_weights(y: np.ndarray, alpha: float = 1.0, eps: float = 1e-6) -> np.ndarray:
    """DenseWeight (Steininger et al., 2021): ``w = max(1 - α·p̂(y), ε)`` with p̂ the KDE
    density min-max scaled to [0, 1], normalised to mean 1 (reconstructed from the paper)."""
    from scipy.stats import gaussian_kde

    y = np.asarray(y, dtype=float)
    if len(y) < 2 or np.std(y) == 0:
        return np.ones_like(y)
    p = gaussian_kde(y)(y)
    p = (p - p.min()) / max(p.max() - p.min(), 1e-12)
    w = np.maximum(1.0 - alpha * p, eps)
    return w / w.mean()


def _dist():
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        return dist
    return None


def train_regressor(
    model: nn.Module,
    fleet: Fleet,
    config: TrainConfig,
    *,
    seed: int,
    device: str | torch.device = "cpu",
    callback: Callable[[int, float], None] | None = None,
) -> TrainResult:
    """Fit ``model(curves, mask) -> [B, 1]`` on the fleet's cells to a training-loss plateau."""
    if len(fleet) < 2:
        raise ValueError(f"need at least 2 training cells, got {len(fleet)}")
    T = fleet.T
    if not 1 <= config.min_window <= T:
        raise ValueError(f"min_window must lie in [1, {T}], got {config.min_window}")
    dist = _dist()
    rank, world = (dist.get_rank(), dist.get_world_size()) if dist else (0, 1)
    model.to(device)
    if dist:  # start from one set of parameters
        for p in model.parameters():
            dist.broadcast(p.data, src=0)
    scaler = LabelScaler.fit(fleet.life)
    target = torch.as_tensor(scaler.transform(fleet.life), dtype=torch.float32, device=device)
    weights = torch.as_tensor(
        dense_weights(fleet.life, config.kde_alpha) if config.kde_alpha else np.ones(len(fleet)),
        dtype=torch.float32,
        device=device,
    )
    curves = torch.as_tensor(fleet.curves, dtype=torch.float32, device=device)
    opt = torch.optim.Adam(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    rule = Plateau(config.plateau_window, config.patience, config.min_delta, config.max_epochs)
    rng = np.random.default_rng(seed)
    losses, seen, unconverged = [], [], 0
    model.train()
    while not rule.stopped:
        cells = np.repeat(np.arange(len(fleet)), config.windows_per_cell)
        lengths = rng.integers(config.min_window, T + 1, size=len(cells))
        order = rng.permutation(len(cells))[rank::world]
        total, count = 0.0, 0
        for start in range(0, len(order), config.batch_size):
            idx = order[start : start + config.batch_size]
            c, ln = cells[idx], lengths[idx]
            if len(losses) == 0:
                seen.extend(zip(c.tolist(), ln.tolist(), strict=True))
            mask = torch.as_tensor(window_mask(ln, T), device=device)
            pred = model(curves[c], mask).squeeze(-1)
            loss = (weights[c] * (pred - target[c]) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            if dist:
                for p in model.parameters():
                    if p.grad is not None:
                        dist.all_reduce(p.grad)
                        p.grad /= world
            if config.grad_clip:
                nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
            opt.step()
            total += float(loss.detach()) * len(idx)
            count += len(idx)
            conv = getattr(model, "last_converged", None)
            if conv is not None:
                unconverged += int((~conv).sum())
        stats = torch.tensor([total, float(count)], dtype=torch.float64)
        if dist:
            dist.all_reduce(stats)
        epoch_loss = float(stats[0] / stats[1])
        losses.append(epoch_loss)
        if callback is not None:
            callback(len(losses), epoch_loss)
        rule.update(epoch_loss)
    model.eval()
    return TrainResult(losses, rule.summary(), scaler, seen, world, unconverged)


@torch.no_grad()
def predict(
    model: nn.Module,
    curves: np.ndarray,
    lengths: np.ndarray,
    scaler: LabelScaler,
    *,
    batch_size: int = 128,
    device: str | torch.device = "cpu",
) -> np.ndarray:
    """EOL predictions in cycles for each (cell curves, window length)."""
    model.eval()
    T = curves.shape[1]
    out = []
    for start in range(0, len(curves), batch_size):
        x = torch.as_tensor(curves[start : start + batch_size], dtype=torch.float32, device=device)
        mask = torch.as_tensor(window_mask(lengths[start : start + batch_size], T), device=device)
        out.append(model(x, mask).squeeze(-1).cpu().numpy())
    return scaler.inverse(np.concatenate(out))
