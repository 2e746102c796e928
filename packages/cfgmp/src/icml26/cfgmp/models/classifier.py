"""A digits classifier for evaluating generated samples.

It plays the role Inception plays for FID/IS on ImageNet: class accuracy of
generated images (does the sample show the requested digit?), and penultimate-layer
features for the Fréchet distance and precision/recall
(:mod:`icml26.cfgmp.metrics`). An MLP 64 → 256 → 128 → 10 (ReLU) trained with
cross-entropy on real digits; ``features`` are the 128 penultimate activations.
"""

from __future__ import annotations

import logging

import torch
from torch import Tensor, nn

from icml26.cfgmp.models.adam import Adam

log = logging.getLogger(__name__)

__all__ = ["DigitsClassifier", "train_classifier"]


class DigitsClassifier(nn.Module):
    """MLP classifier with a ``features`` method (the penultimate activations)."""

    def __init__(self, dim: int = 64, num_classes: int = 10, hidden: int = 256, feat: int = 128):
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, feat), nn.ReLU()
        )
        self.head = nn.Linear(feat, num_classes)
        self.dim = dim

    def _check(self, x: Tensor) -> Tensor:
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise ValueError(f"x must be (B, {self.dim}), got {tuple(x.shape)}")
        return x.to(next(self.parameters()).dtype)

    def features(self, x: Tensor) -> Tensor:
        return self.body(self._check(x))

    def forward(self, x: Tensor) -> Tensor:
        return self.head(self.features(x))

    @torch.no_grad()
    def predict(self, x: Tensor) -> Tensor:
        return self(x).argmax(dim=1)


def train_classifier(
    x: Tensor,
    y: Tensor,
    *,
    steps: int = 600,
    batch_size: int = 128,
    lr: float = 2e-3,
    noise_std: float = 0.05,
    generator: torch.Generator | None = None,
) -> DigitsClassifier:
    """Train a :class:`DigitsClassifier` on ``(x, y)`` (Adam, light input noise)."""
    if x.ndim != 2 or y.shape != (x.shape[0],):
        raise ValueError(f"need x (N, D) and y (N,), got {tuple(x.shape)} and {tuple(y.shape)}")
    gen = generator if generator is not None else torch.Generator().manual_seed(0)
    num_classes = int(y.max()) + 1
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=gen)))
        model = DigitsClassifier(x.shape[1], num_classes)
    opt = Adam(model.parameters(), lr=lr)
    for _ in range(steps):
        idx = torch.randint(0, x.shape[0], (batch_size,), generator=gen)
        xb = x[idx] + noise_std * torch.randn(batch_size, x.shape[1], generator=gen)
        loss = nn.functional.cross_entropy(model(xb), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    log.info("digits classifier: final loss %.4f", float(loss.detach()))
    return model
