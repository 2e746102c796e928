"""The small networks every learner shares: an MLP and an encoder-only Transformer."""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["SegmentTransformer", "default_device", "mlp"]


def default_device(device: str | torch.device | None = None) -> torch.device:
    """``device`` as given, else CUDA when present, else CPU."""
    if device is not None:
        return torch.device(device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def mlp(n_in: int, n_out: int, hidden: tuple[int, ...] = (64, 64)) -> nn.Sequential:
    """Linear–ReLU stack."""
    layers: list[nn.Module] = []
    width = n_in
    for h in hidden:
        layers += [nn.Linear(width, h), nn.ReLU()]
        width = h
    layers.append(nn.Linear(width, n_out))
    return nn.Sequential(*layers)


class SegmentTransformer(nn.Module):
    """Encoder-only Transformer over a segment's (s_t, a_t) tokens with learned positions;
    one output per token ([inferred]: per-token outputs, summed by the caller)."""

    def __init__(self, n_in: int, length: int, *, width: int = 32, heads: int = 2, layers: int = 1):
        super().__init__()
        self.embed = nn.Linear(n_in, width)
        self.position = nn.Parameter(torch.zeros(1, length, width))
        layer = nn.TransformerEncoderLayer(
            width, heads, dim_feedforward=2 * width, dropout=0.0, batch_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(width, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, N, n_in) -> (B, N, 1)
        h = self.embed(x) + self.position[:, : x.shape[1]]
        return self.head(self.encoder(h))
