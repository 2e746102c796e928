"""Adam for the small models of this package.

``torch.optim`` imports the compiler stack (``torch._dynamo``) the first time an
optimizer is used, which costs seconds of start-up on a cold interpreter; the
flow network and the classifier here only need plain Adam (Kingma & Ba, 2015):

    m ← β1·m + (1 − β1)·g,   v ← β2·v + (1 − β2)·g²,
    θ ← θ − lr_t · m̂ / (sqrt(v̂) + ε),   m̂ = m/(1 − β1^k),  v̂ = v/(1 − β2^k),

with an optional cosine decay of ``lr`` over ``total_steps``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import torch
from torch import nn

__all__ = ["Adam"]


class Adam:
    """Adam with bias correction and an optional cosine learning-rate decay."""

    def __init__(
        self,
        params: Iterable[nn.Parameter],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        total_steps: int | None = None,
    ):
        if lr <= 0 or not 0 <= betas[0] < 1 or not 0 <= betas[1] < 1 or eps <= 0:
            raise ValueError(f"invalid Adam settings: lr={lr}, betas={betas}, eps={eps}")
        self.params = [p for p in params if p.requires_grad]
        self.lr, self.betas, self.eps, self.total_steps = lr, betas, eps, total_steps
        self.m = [torch.zeros_like(p) for p in self.params]
        self.v = [torch.zeros_like(p) for p in self.params]
        self.k = 0

    def current_lr(self) -> float:
        if not self.total_steps:
            return self.lr
        frac = min(self.k, self.total_steps) / self.total_steps
        return 0.5 * self.lr * (1 + math.cos(math.pi * frac))

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        lr = self.current_lr()  # the rate for this step (cosine from lr at step 0)
        self.k += 1
        b1, b2 = self.betas
        c1, c2 = 1 - b1**self.k, 1 - b2**self.k
        for p, m, v in zip(self.params, self.m, self.v, strict=True):
            if p.grad is None:
                continue
            m.mul_(b1).add_(p.grad, alpha=1 - b1)
            v.mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)
            p.addcdiv_(m / c1, (v / c2).sqrt_().add_(self.eps), value=-lr)
