"""Honest model-evaluation (NFE) accounting.

Every sampler calls the model through one :class:`Evaluator`, which checks the
model's output and counts network function evaluations *per sample*: a conditional
and an unconditional prediction are two NFEs even when a model computes them in one
batched forward pass (``velocity_pair``). Evaluations made only to measure things
(diagnostics) are counted apart, so they never inflate or hide a method's cost.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from icml26.cfgmp.conventions import VelocityModel

__all__ = ["Evaluator"]


class Evaluator:
    """Calls ``model(x, t, cond)`` and counts NFEs.

    If the model has a method ``velocity_pair(x, t, cond, null_cond) -> (v_c, v_u)``
    it is used for the batched conditional/unconditional evaluation (2 NFEs).
    """

    def __init__(self, model: VelocityModel, cond: Any, null_cond: Any = None):
        if not callable(model):
            raise TypeError(f"model must be callable as v(x, t, cond), got {type(model).__name__}")
        self.model, self.cond, self.null_cond = model, cond, null_cond
        self.nfe = 0
        self.diagnostic_nfe = 0
        self.model_calls = 0
        self._pair = getattr(model, "velocity_pair", None)

    def _check(self, v: Any, x: Tensor) -> Tensor:
        if not isinstance(v, Tensor):
            raise TypeError(f"the model must return a tensor, got {type(v).__name__}")
        if v.shape != x.shape:
            raise ValueError(
                f"the model returned shape {tuple(v.shape)} for an input of shape {tuple(x.shape)}"
            )
        return v

    def _t(self, t: float | Tensor, x: Tensor) -> Tensor:
        # times in at least float32 even for half-precision latents (t near 1 needs it)
        dtype = torch.promote_types(x.dtype, torch.float32)
        return torch.as_tensor(t, dtype=dtype, device=x.device).expand(x.shape[0])

    def _count(self, n: int, diagnostic: bool) -> None:
        if diagnostic:
            self.diagnostic_nfe += n
        else:
            self.nfe += n

    def cond_velocity(self, x: Tensor, t: float | Tensor, *, diagnostic: bool = False) -> Tensor:
        """``v(x, t, cond)``: 1 NFE."""
        self._count(1, diagnostic)
        self.model_calls += 1
        return self._check(self.model(x, self._t(t, x), self.cond), x)

    def uncond_velocity(self, x: Tensor, t: float | Tensor, *, diagnostic: bool = False) -> Tensor:
        """``v(x, t, ∅)``: 1 NFE."""
        self._count(1, diagnostic)
        self.model_calls += 1
        return self._check(self.model(x, self._t(t, x), self.null_cond), x)

    def pair(
        self, x: Tensor, t: float | Tensor, *, diagnostic: bool = False
    ) -> tuple[Tensor, Tensor]:
        """``(v(x, t, cond), v(x, t, ∅))``: 2 NFEs, one batched call when the model allows."""
        if self._pair is None:
            return (
                self.cond_velocity(x, t, diagnostic=diagnostic),
                self.uncond_velocity(x, t, diagnostic=diagnostic),
            )
        self._count(2, diagnostic)
        self.model_calls += 1
        v_c, v_u = self._pair(x, self._t(t, x), self.cond, self.null_cond)
        return self._check(v_c, x), self._check(v_u, x)
