"""The two networks of TopoDistill (architectures **reconstructed**; the abstract names
only "a global embedder trained on multivariate observations" and "a delay embedder").

- :class:`GlobalEmbedder` (teacher) ``g_φ: R^{d·w} → R^{m_G}`` on short multivariate
  windows ``[X_{t−w+1}, …, X_t]``, with a head forecasting ``X_{t+1..t+h}`` from the
  latent (self-supervised, cf. Latent-CCM, De Brouwer et al. 2021).
- :class:`DelayEmbedder` (student) ``f_θ: R^L → R^m`` on one variable's delay window
  ``[x(t), x(t − τ), …, x(t − (L−1)τ)]``, with a head forecasting ``x(t+1..t+h)`` —
  the univariate term that keeps the student grounded in its own variable.

Both are small MLPs (a 1-D CNN student is available with ``architecture="cnn"``);
small on purpose: the brief's specificity safeguard is a student too small to
memorise which training samples are global neighbours.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["ARCHITECTURES", "DelayEmbedder", "GlobalEmbedder", "mlp"]

ARCHITECTURES = ("mlp", "cnn")


def mlp(sizes: list[int]) -> nn.Sequential:
    """Linear layers with GELU between them (none after the last)."""
    layers: list[nn.Module] = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(nn.GELU())
    return nn.Sequential(*layers)


class GlobalEmbedder(nn.Module):
    """Teacher: multivariate window (B, w, d) → latent (B, m_G); ``forecast`` → (B, h, d)."""

    def __init__(self, d: int, window: int, latent: int, hidden: int, horizon: int = 1):
        super().__init__()
        self.d, self.window, self.horizon = d, window, horizon
        self.encoder = mlp([d * window, hidden, hidden, latent])
        self.head = mlp([latent, hidden, d * horizon])

    def forward(self, windows: torch.Tensor) -> torch.Tensor:
        return self.encoder(windows.flatten(1))

    def forecast(self, z: torch.Tensor) -> torch.Tensor:
        return self.head(z).view(-1, self.horizon, self.d)


class DelayEmbedder(nn.Module):
    """Student: delay window (B, L) → latent (B, m); ``forecast`` → (B, h).

    With ``residual`` the output is ``u_t[:m] + f_θ(u_t)``: the m-dimensional delay
    vector at the same lag (the plain CCM manifold when m = E) plus a learned
    correction whose last layer starts at zero, so distillation starts from the
    delay embedding and refines it (reconstructed reading of "improves univariate
    shadow-manifold reconstruction").
    """

    def __init__(
        self,
        length: int,
        latent: int,
        hidden: int,
        horizon: int = 1,
        architecture: str = "mlp",
        residual: bool = False,
    ):
        super().__init__()
        if architecture not in ARCHITECTURES:
            raise ValueError(f"architecture must be one of {ARCHITECTURES}, got {architecture!r}")
        if residual and latent > length:
            raise ValueError(f"a residual student needs latent ({latent}) <= window ({length})")
        self.architecture, self.residual, self.latent = architecture, residual, latent
        if architecture == "mlp":
            self.encoder = mlp([length, hidden, hidden, latent])
        else:
            channels = max(4, hidden // 4)
            self.encoder = nn.Sequential(
                nn.Unflatten(1, (1, length)),
                nn.Conv1d(1, channels, kernel_size=5, padding=2),
                nn.GELU(),
                nn.Conv1d(channels, channels, kernel_size=5, padding=2),
                nn.GELU(),
                nn.Flatten(1),
                mlp([channels * length, hidden, latent]),
            )
        self.head = mlp([latent, hidden, horizon])
        if residual:
            last = self.encoder[-1] if architecture == "mlp" else self.encoder[-1][-1]
            nn.init.zeros_(last.weight)
            nn.init.zeros_(last.bias)

    def forward(self, windows: torch.Tensor) -> torch.Tensor:
        z = self.encoder(windows)
        return windows[:, : self.latent] + z if self.residual else z

    def forecast(self, z: torch.Tensor) -> torch.Tensor:
        return self.head(z)
