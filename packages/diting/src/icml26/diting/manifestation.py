"""Tri-coupled degradation manifestation (DITING, step 3).

From the authors' pseudocode: every embedded dimension carries three branches L, M, R, each a
state x and a velocity v stepped once per cycle. L is driven by ``A sin(ωt)``, R by
``A sin(ωt + π)`` (anti-phase), M by the residual R(t); the couplings are
``Γ_L = κ(x_L - x_M)``, ``Γ_M = κ(2x_M - x_L - x_R)``, ``Γ_R = κ(x_R - x_M)``; the response is
odd, ``N(x) = φ(x) - φ(-x)``; the update is semi-implicit (acceleration → velocity → state);
the discrepancy energy is ``E_t = ‖x_L + x_R‖²``.

Reconstructed (constants withheld): ``a_b = F_b(t) - c·v_b - N(x_b) - Γ_b`` with
``F_L = A sin(ωt)``, ``F_R = -A sin(ωt)``, ``F_M = R(t)``; ``v ← v + Δt·a``; ``x ← x + Δt·v``;
t is the physical time ``k·Δt`` of cycle k; φ = tanh, Δt = 1/T, x = v = 0 at t = 0. With a
linear N the sum ``x_L + x_R`` is driven by M alone and the drive cannot reach E (tested).
"""

from __future__ import annotations

import math

import torch
from torch import nn

__all__ = ["PHI", "TriCoupledOscillators", "odd_response"]

PHI = {
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "softplus": nn.functional.softplus,  # N(x) = x exactly: linear (a pitfall, tested)
    "relu": torch.relu,  # N(x) = x exactly: linear
    "linear": lambda x: 0.5 * x,  # N(x) = x
}


def odd_response(x: torch.Tensor, phi: str = "tanh") -> torch.Tensor:
    """``N(x) = φ(x) - φ(-x)``."""
    try:
        f = PHI[phi]
    except KeyError:
        raise ValueError(f"unknown φ {phi!r}; use one of {sorted(PHI)}") from None
    return f(x) - f(-x)


class TriCoupledOscillators(nn.Module):
    """``R [B, T, D]``, ``mask [B, T]`` → discrepancy energy ``E [B, T]`` (zero past the window).

    Switches (the ablations): ``readout="pair"`` (E = ‖x_L + x_R‖²) or ``"single"``
    (E = ‖x_L‖²); ``amplitude=0`` (no drive); ``kappa=0`` (no coupling); ``phi="linear"``;
    ``normalise`` ``"none"`` / ``"dim"`` (÷ D) / ``"log1p"`` / ``"log"``
    (``1 + log(E / D + floor) / |log floor|``: zero energy reads 0);
    any but ``"none"`` is a deviation.
    ``learnable=True`` makes A, ω, κ and c trainable (positive via a log parameter for κ, c).
    """

    def __init__(
        self,
        *,
        amplitude: float = 1.0,
        omega: float = 2 * math.pi,
        kappa: float = 1.0,
        damping: float = 1.0,
        phi: str = "tanh",
        dt: float | None = None,
        readout: str = "pair",
        normalise: str = "none",
        learnable: bool = False,
        log_floor: float = 1e-12,
    ):
        super().__init__()
        if phi not in PHI:
            raise ValueError(f"unknown φ {phi!r}; use one of {sorted(PHI)}")
        if readout not in ("pair", "single"):
            raise ValueError(f"readout must be 'pair' or 'single', got {readout!r}")
        if normalise not in ("none", "dim", "log1p", "log"):
            raise ValueError(
                f"normalise must be 'none', 'dim', 'log1p' or 'log', got {normalise!r}"
            )
        if kappa < 0 or damping < 0:
            raise ValueError(f"κ and c must be >= 0, got κ={kappa}, c={damping}")
        self.phi, self.dt, self.readout, self.normalise = phi, dt, readout, normalise
        self.learnable, self.log_floor = learnable, log_floor
        values = {
            "amplitude": torch.tensor(float(amplitude)),
            "omega": torch.tensor(float(omega)),
            "kappa": torch.tensor(float(kappa)),
            "damping": torch.tensor(float(damping)),
        }
        for name, v in values.items():
            if learnable and not (name == "kappa" and float(v) == 0.0):
                self.register_parameter(name, nn.Parameter(v))
            else:
                self.register_buffer(name, v)

    def forward(self, R: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        B, T, D = R.shape
        dt = self.dt if self.dt is not None else 1.0 / T
        kappa, c = self.kappa.abs(), self.damping.abs()
        # the three branches stacked as [3, B, D] (L, M, R); Γ = κ·Lap·x with the path
        # Laplacian of L - M - R: Γ_L = κ(x_L - x_M), Γ_M = κ(2x_M - x_L - x_R), Γ_R = κ(x_R - x_M)
        lap = torch.tensor([[1.0, -1.0, 0.0], [-1.0, 2.0, -1.0], [0.0, -1.0, 1.0]], dtype=R.dtype)
        lap = (kappa * lap.to(R.device)).to(R.dtype)
        times = torch.arange(1, T + 1, device=R.device, dtype=R.dtype) * dt
        drive = self.amplitude * torch.sin(self.omega * times)  # [T]
        side = torch.stack([drive, -drive], dim=-1)  # F_L = A sin ωt, F_R = A sin(ωt + π)
        x = R.new_zeros(3, B, D)
        v = R.new_zeros(3, B, D)
        out = []
        for k in range(T):
            force = torch.stack([side[k, 0].expand(B, D), R[:, k], side[k, 1].expand(B, D)])
            coupling = torch.einsum("ij,jbd->ibd", lap, x)
            a = force - c * v - odd_response(x, self.phi) - coupling
            v = v + dt * a  # semi-implicit: acceleration -> velocity -> state
            x = x + dt * v
            out.append(x[0] + x[2] if self.readout == "pair" else x[0])
        E = (torch.stack(out, dim=1) ** 2).sum(-1)  # [B, T]
        if self.normalise == "dim":
            E = E / D
        elif self.normalise == "log1p":
            E = torch.log1p(E)
        elif self.normalise == "log":
            # log energy per dimension, shifted and scaled so that zero energy (and the
            # masked cycles) read 0 and E / D = 1 reads 1
            E = torch.log(E / D + self.log_floor) / -math.log(self.log_floor) + 1.0
        return E * mask
