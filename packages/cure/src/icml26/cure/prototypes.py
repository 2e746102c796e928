"""The network: an encoder, K unit prototypes with cosine logits, a projection head.

SimGCD's ``DINOHead`` (CVMI-Lab/SimGCD, ``model.py``) puts a weight-normalised linear
layer with unit norm (``weight_g`` fixed to 1) on the L2-normalised backbone feature:
the logits are cosines ``z·μ_k`` that the losses divide by τ = 0.1. The projection MLP
on the raw feature feeds SupCon and InfoNCE. CURE (reconstructed) uses the same head: its
prototypes are the rows μ_k. The encoder here is a small MLP standing in for the DINO
ViT-B/16 backbone (the smoke scale; see the README's Fidelity section).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["GCDNet", "cosine_logits", "estimate_n_clusters"]

TAU = 0.1  # SimGCD's logit temperature (student_out / 0.1)


def cosine_logits(z: torch.Tensor, prototypes: torch.Tensor, tau: float = TAU) -> torch.Tensor:
    """s_k = cos(z, μ_k) / τ."""
    return F.normalize(z, dim=-1) @ F.normalize(prototypes, dim=-1).T / tau


class GCDNet(nn.Module):
    """Encoder g, normalised feature z = g(x)/‖g(x)‖, prototypes μ (K × dim), projector."""

    def __init__(
        self,
        in_dim: int,
        n_prototypes: int,
        *,
        hidden: int = 128,
        dim: int = 64,
        proj_hidden: int = 128,
        proj_dim: int = 32,
    ) -> None:
        super().__init__()
        for name, v in (("in_dim", in_dim), ("n_prototypes", n_prototypes), ("dim", dim)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        self.encoder = nn.Sequential(
            nn.Linear(in_dim, hidden),
            nn.GELU(),
            nn.Linear(hidden, hidden),
            nn.GELU(),
            nn.Linear(hidden, dim),
        )
        self.projector = nn.Sequential(
            nn.Linear(dim, proj_hidden), nn.GELU(), nn.Linear(proj_hidden, proj_dim)
        )
        self.prototype_weight = nn.Parameter(torch.empty(n_prototypes, dim))
        nn.init.trunc_normal_(self.prototype_weight, std=0.02)

    @property
    def n_prototypes(self) -> int:
        return int(self.prototype_weight.shape[0])

    def prototypes(self) -> torch.Tensor:
        """The unit prototypes μ_k (weight norm with g = 1, as SimGCD's last layer)."""
        return F.normalize(self.prototype_weight, dim=-1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(feature h, projection, cosines z·μ_k); the losses divide the cosines by τ."""
        h = self.encoder(x)
        z = F.normalize(h, dim=-1)
        return h, self.projector(h), z @ self.prototypes().T

    @torch.no_grad()
    def features(self, x: torch.Tensor, batch: int = 4096) -> torch.Tensor:
        """Normalised features z of ``x`` (evaluation mode, no augmentation)."""
        was = self.training
        self.eval()
        out = torch.cat(
            [F.normalize(self.encoder(x[i : i + batch]), dim=-1) for i in range(0, len(x), batch)]
        )
        self.train(was)
        return out

    @torch.no_grad()
    def predict(self, x: torch.Tensor, batch: int = 4096) -> np.ndarray:
        """argmax_k z·μ_k, the GCD inference rule."""
        z = self.features(x, batch)
        return (z @ self.prototypes().T).argmax(1).cpu().numpy()


def estimate_n_clusters(
    features: np.ndarray, candidates: list[int] | range, *, seed: int = 0
) -> int:
    """The number of clusters with the best silhouette of k-means over ``candidates``.

    A separate option: the reproduction fixes K to the true class count (the GCD
    protocol); this is for users without K.
    """
    from sklearn.cluster import KMeans
    from sklearn.metrics import silhouette_score

    x = np.asarray(features, dtype=np.float64)
    cands = sorted({int(k) for k in candidates})
    if not cands or cands[0] < 2 or cands[-1] >= len(x):
        raise ValueError(f"candidates must lie in [2, n_samples), got {cands}")
    best, best_k = -np.inf, cands[0]
    sample = min(len(x), 2000)
    for k in cands:
        labels = KMeans(k, n_init=3, random_state=seed).fit_predict(x)
        score = silhouette_score(x, labels, sample_size=sample, random_state=seed)
        if score > best:
            best, best_k = score, k
    return best_k
