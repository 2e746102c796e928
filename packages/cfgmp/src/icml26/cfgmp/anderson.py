"""Anderson acceleration (type II, window m) of a fixed-point iteration z ← g(z).

CFG-MP+ (official code, ``solve_anderson_weights`` in ``CFG-MP_DiT/utils_dit.py`` and
``solve_anderson_mixing`` in ``CFG-MP_SD/utils_SD.py``) keeps the last ``m + 1``
iterates ``z_i``, their images ``g_i = g(z_i)`` and residuals ``f_i = g_i − z_i``, solves

    min_a ‖Σ_i a_i f_i‖²   subject to   Σ_i a_i = 1          (ridge-regularised)

per sample, and moves to ``z ← (1 − β)·Σ a_i z_i + β·Σ a_i g_i``. Two equivalent solvers:

- ``"gram"`` (DiT code): ``a = (F Fᵀ + λI)⁻¹ 1``, normalised to sum to one;
- ``"lstsq"`` (SD code): the difference form ``γ = argmin ‖f_k − ΔF γ‖² + λ²‖γ‖²`` with
  ``ΔF_i = f_k − f_i``, then ``a_i = γ_i`` (history) and ``a_k = 1 − Σγ``. (The SD code
  appends ``λ·I`` rows to the least-squares system, so its Tikhonov weight is ``λ²``.)

Without the ridge both give the same constrained least-squares weights. The solve
runs in at least float32 even for half-precision inputs, as in the SD code.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor

__all__ = ["AndersonSolver", "anderson_mix", "anderson_weights"]

AndersonSolver = Literal["gram", "lstsq"]


def _work_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.promote_types(dtype, torch.float32)


def anderson_weights(
    residuals: Tensor, *, ridge: float = 1e-4, solver: AndersonSolver = "gram"
) -> Tensor:
    """Mixing weights ``a`` (B, M) for residual histories ``residuals`` (B, M, D).

    The last entry along M is the newest residual. Rows of ``a`` sum to one (up to
    the ``1e-8`` guard of the DiT code's normalisation).
    """
    if residuals.ndim != 3:
        raise ValueError(f"residuals must be (batch, history, dim), got {tuple(residuals.shape)}")
    if ridge < 0:
        raise ValueError(f"ridge must be non-negative, got {ridge}")
    b, m, _ = residuals.shape
    f = residuals.to(_work_dtype(residuals.dtype))
    if m == 1:
        return torch.ones(b, 1, dtype=f.dtype, device=f.device)
    if solver == "gram":
        gram = f @ f.transpose(1, 2) + ridge * torch.eye(m, dtype=f.dtype, device=f.device)
        ones = torch.ones(b, m, 1, dtype=f.dtype, device=f.device)
        try:
            raw = torch.linalg.solve(gram, ones)
        except RuntimeError:  # singular without a ridge: fall back to plain averaging
            raw = ones
        return (raw / (raw.sum(dim=1, keepdim=True) + 1e-8)).squeeze(-1)
    if solver == "lstsq":
        latest = f[:, -1:, :]
        delta = (latest - f[:, :-1, :]).transpose(1, 2)  # (B, D, m)
        target = latest.transpose(1, 2)  # (B, D, 1)
        if ridge > 0:
            eye = ridge * torch.eye(m - 1, dtype=f.dtype, device=f.device).expand(b, -1, -1)
            delta = torch.cat([delta, eye], dim=1)
            target = torch.cat([target, f.new_zeros(b, m - 1, 1)], dim=1)
        gamma = torch.linalg.lstsq(delta, target).solution.squeeze(-1)  # (B, m − 1)
        return torch.cat([gamma, 1 - gamma.sum(dim=1, keepdim=True)], dim=1)
    raise ValueError(f"solver must be 'gram' or 'lstsq', got {solver!r}")


def anderson_mix(iterates: Tensor, images: Tensor, weights: Tensor, damping: float = 1.0) -> Tensor:
    """``(1 − β)·Σ a_i z_i + β·Σ a_i g_i`` for histories (B, M, D) and weights (B, M)."""
    if iterates.shape != images.shape or weights.shape != iterates.shape[:2]:
        raise ValueError(
            f"histories must share (B, M, D) and weights be (B, M); got {tuple(iterates.shape)}, "
            f"{tuple(images.shape)}, {tuple(weights.shape)}"
        )
    work = _work_dtype(iterates.dtype)
    w = weights[..., None].to(work)
    mixed_g = (w * images.to(work)).sum(dim=1)
    if damping == 1.0:  # the DiT code skips the iterate average at β = 1
        return mixed_g.to(iterates.dtype)
    mixed_z = (w * iterates.to(work)).sum(dim=1)
    return ((1.0 - damping) * mixed_z + damping * mixed_g).to(iterates.dtype)
