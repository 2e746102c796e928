"""The epoch loop every model here trains with, stopped by a training-loss plateau.

One loop for CURE's two stages, SimGCD and GCD, so that the methods differ only in
their losses: the same optimiser, batch size, shuffling and convergence rule
(:class:`icml26.shared.Plateau` on the epoch-mean training loss, with a cap).

Under ``torchrun`` / ``accelerate launch`` with an initialised process group the loop is
data parallel: every rank draws the same seeded order, takes its own slice of each
global batch (``world_size`` × ``batch_size`` samples), gradients and the epoch loss
are averaged over ranks, so parameters stay identical and all ranks stop together.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from icml26.shared import Plateau, progress
from icml26.shared.distributed import _torch_dist

__all__ = ["TrainConfig", "fit_epochs"]

OPTIMIZERS = ("adam", "sgd")


@dataclass(frozen=True)
class TrainConfig:
    """Optimiser, batch and stopping rule of one training run.

    ``optimizer="sgd"`` is SimGCD's (lr 0.1, momentum 0.9, weight decay 1e-4, cosine to
    lr·1e-3 over the cap); the smoke scale uses Adam 1e-3 for every method.
    ``warmup_teacher_epochs`` is the distillation teacher's temperature warm-up.
    """

    batch_size: int = 256
    lr: float = 1e-3
    weight_decay: float = 0.0
    momentum: float = 0.9
    optimizer: str = "adam"
    cap_epochs: int = 100
    patience: int = 8
    min_delta: float = 0.002
    warmup_teacher_epochs: int = 30

    def __post_init__(self) -> None:
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {self.optimizer!r}")
        if self.batch_size < 4 or self.cap_epochs < 1 or self.patience < 1:
            raise ValueError("need batch_size >= 4, cap_epochs >= 1 and patience >= 1")
        if self.lr <= 0:
            raise ValueError(f"lr must be positive, got {self.lr}")

    def plateau(self) -> Plateau:
        return Plateau(
            window=1, patience=self.patience, min_delta=self.min_delta, cap=self.cap_epochs
        )


StepFn = Callable[[torch.Tensor, int], torch.Tensor]


def fit_epochs(
    model: nn.Module,
    indices: np.ndarray,
    step: StepFn,
    config: TrainConfig,
    generator: torch.Generator,
    *,
    desc: str = "epochs",
    on_epoch: Callable[[int, float], None] | None = None,
    on_batch: Callable[[torch.Tensor], None] | None = None,
) -> Plateau:
    """Train ``model`` on minibatches of ``indices`` until the epoch-mean loss plateaus.

    ``step(batch_indices, epoch)`` returns the loss of one minibatch. Batches are drawn
    by ``generator`` and the last incomplete batch is dropped (as SimGCD's loader),
    unless there is only one. Returns the stopping rule (``rule.summary()``).
    """
    params = [p for p in model.parameters() if p.requires_grad]
    if config.optimizer == "adam":
        opt: torch.optim.Optimizer = torch.optim.Adam(
            params, lr=config.lr, weight_decay=config.weight_decay
        )
        sched = None
    else:
        opt = torch.optim.SGD(
            params, lr=config.lr, momentum=config.momentum, weight_decay=config.weight_decay
        )
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(
            opt, T_max=config.cap_epochs, eta_min=config.lr * 1e-3
        )
    idx = torch.as_tensor(np.asarray(indices), dtype=torch.long)
    n = len(idx)
    if n < 2:
        raise ValueError(f"need at least 2 training samples, got {n}")
    dist = _torch_dist()
    ws, rk = (dist.get_world_size(), dist.get_rank()) if dist is not None else (1, 0)
    if dist is not None:
        for p in model.parameters():
            dist.broadcast(p.data, src=0)
    bs = min(config.batch_size, max(n // ws, 2))
    rule = config.plateau()
    model.train()
    for epoch in progress(range(config.cap_epochs), desc=desc, leave=False):
        perm = idx[torch.randperm(n, generator=generator)]
        losses = []
        for start in range(0, n - bs * ws + 1, bs * ws):
            batch = perm[start + rk * bs : start + (rk + 1) * bs]
            loss = step(batch, epoch)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            if dist is not None:
                for p in params:
                    if p.grad is not None:
                        dist.all_reduce(p.grad)
                        p.grad /= ws
            opt.step()
            losses.append(float(loss.detach()))
            if on_batch is not None:
                on_batch(batch)
        if sched is not None:
            sched.step()
        mean = float(np.mean(losses))
        if dist is not None:
            t = torch.tensor([mean], dtype=torch.float64)
            dist.all_reduce(t)
            mean = float(t) / ws
        if on_epoch is not None:
            on_epoch(epoch, mean)
        if rule.update(mean):
            break
    model.eval()
    return rule
