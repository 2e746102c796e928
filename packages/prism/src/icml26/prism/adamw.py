"""AdamW (Loshchilov & Hutter 2019) as a small stand-alone optimiser.

The update is PyTorch's ``torch.optim.AdamW`` (``amsgrad=False``, ``maximize=False``)::

    θ ← θ (1 − lr·λ)                         # decoupled weight decay
    m ← β₁ m + (1 − β₁) g
    v ← β₂ v + (1 − β₂) g²
    θ ← θ − lr / (1 − β₁ᵗ) · m / (√v / √(1 − β₂ᵗ) + ε)

Why not ``torch.optim.AdamW`` itself: constructing any ``torch.optim.Optimizer``
imports ``torch._dynamo`` (several CPU-seconds per process), which dominates a
one-minute CPU reproduction of tiny models. The numbers are the same; a ``slow`` test
checks this class against ``torch.optim.AdamW`` step by step.

Gradient accumulation, clipping and mixed precision stay with the trainer
(``accelerate``); this class only owns the moments and the update.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import torch


class AdamW:
    """Decoupled-weight-decay Adam over a list of parameters (one parameter group)."""

    def __init__(
        self,
        params: Iterable[torch.nn.Parameter],
        *,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.01,
    ):
        self.params = [p for p in params if p.requires_grad]
        if not self.params:
            raise ValueError("AdamW got no trainable parameters")
        if not lr > 0 or not eps > 0 or weight_decay < 0:
            raise ValueError(
                f"need lr > 0, eps > 0, weight_decay >= 0; got {lr}, {eps}, {weight_decay}"
            )
        if not (0 <= betas[0] < 1 and 0 <= betas[1] < 1):
            raise ValueError(f"betas must lie in [0, 1), got {betas}")
        self.lr, self.betas, self.eps, self.weight_decay = float(lr), betas, eps, weight_decay
        self.step_count = 0
        self.exp_avg = [
            torch.zeros_like(p, memory_format=torch.preserve_format) for p in self.params
        ]
        self.exp_avg_sq = [
            torch.zeros_like(p, memory_format=torch.preserve_format) for p in self.params
        ]

    @torch.no_grad()
    def step(self) -> None:
        """One update of every parameter that has a gradient."""
        idx = [i for i, p in enumerate(self.params) if p.grad is not None]
        if not idx:
            return
        self.step_count += 1
        b1, b2 = self.betas
        params = [self.params[i] for i in idx]
        grads = [self.params[i].grad for i in idx]
        m = [self.exp_avg[i] for i in idx]
        v = [self.exp_avg_sq[i] for i in idx]
        if self.weight_decay:
            torch._foreach_mul_(params, 1.0 - self.lr * self.weight_decay)
        torch._foreach_lerp_(m, grads, 1.0 - b1)  # m = β1 m + (1 − β1) g
        torch._foreach_mul_(v, b2)
        torch._foreach_addcmul_(v, grads, grads, 1.0 - b2)  # v = β2 v + (1 − β2) g²
        bc1 = 1.0 - b1**self.step_count
        bc2_sqrt = math.sqrt(1.0 - b2**self.step_count)
        denom = torch._foreach_sqrt(v)
        torch._foreach_div_(denom, bc2_sqrt)
        torch._foreach_add_(denom, self.eps)
        torch._foreach_addcdiv_(params, m, denom, -self.lr / bc1)

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    def state_dict(self) -> dict:
        return {
            "step": self.step_count,
            "lr": self.lr,
            "exp_avg": [t.clone() for t in self.exp_avg],
            "exp_avg_sq": [t.clone() for t in self.exp_avg_sq],
        }

    def load_state_dict(self, state: dict) -> None:
        if len(state["exp_avg"]) != len(self.params):
            raise ValueError("the state belongs to another parameter list")
        self.step_count, self.lr = int(state["step"]), float(state["lr"])
        for dst, src in zip(
            self.exp_avg + self.exp_avg_sq, state["exp_avg"] + state["exp_avg_sq"], strict=True
        ):
            dst.copy_(src)
