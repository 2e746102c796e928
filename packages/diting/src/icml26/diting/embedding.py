"""Hierarchical cycle embedding (DITING, step 1).

The authors' pseudocode permutes ``cycle_curve_data [B, T, C, S]`` to ``[B, T, S, C]``,
flattens each cycle to ``D = S·C`` and applies ``Linear(D, D)``. Its full version adds
cycle-, sample- and variable-level positional encodings whose form is withheld; here they are
learnable additive tables behind ``positional=True`` (reconstructed). The initialisation is
not given either: ``init="identity"`` (the default, reconstructed) starts the projection as the
identity, so the residual the oscillators see starts as the measured one; ``"default"`` is
torch's uniform initialisation, with which the smoke fleets overfit (README, Fidelity).
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["CycleEmbedding"]


class CycleEmbedding(nn.Module):
    """``[B, T, C, S] -> [B, T, D]`` with ``D = S·C``: flatten per cycle, then ``Linear(D, D)``."""

    def __init__(self, T: int, C: int, S: int, *, positional: bool = False, init: str = "identity"):
        super().__init__()
        if init not in ("identity", "default"):
            raise ValueError(f"init must be 'identity' or 'default', got {init!r}")
        self.T, self.C, self.S = T, C, S
        self.D = S * C
        self.proj = nn.Linear(self.D, self.D)
        if init == "identity":  # reconstructed: start as the identity map (see the README)
            with torch.no_grad():
                self.proj.weight.copy_(torch.eye(self.D))
                self.proj.bias.zero_()
        self.positional = positional
        if positional:  # reconstructed: learnable additive encodings at three levels
            self.pe_cycle = nn.Parameter(torch.zeros(T, self.D))
            self.pe_sample = nn.Parameter(torch.zeros(S, 1))
            self.pe_variable = nn.Parameter(torch.zeros(1, C))

    def forward(self, curves: torch.Tensor) -> torch.Tensor:
        B, T, C, S = curves.shape
        x = curves.permute(0, 1, 3, 2)  # [B, T, S, C]
        if self.positional:
            x = x + self.pe_sample + self.pe_variable
        x = self.proj(x.reshape(B, T, S * C))
        if self.positional:
            x = x + self.pe_cycle[:T]
        return x
