"""Preference Transformer (Kim et al., ICLR 2023), re-implemented after
csmile-1006/PreferenceTransformer, as the reward model of PT + IQL.

- A causal Transformer over the segment's (s_t, a_t) tokens gives hidden states h_t and a
  non-Markovian reward r̂_t = head(h_t) that depends on the segment's past only.
- The *preference attention layer*: queries and keys from h (bidirectional),
  α_{it} = softmax_t(q_i · k_t / √d); z_i = Σ_t α_{it} r̂_t; the segment's score is the
  weighted sum of non-Markovian rewards (1/N) Σ_i z_i = Σ_t w_t r̂_t with importance
  weights w_t = (1/N) Σ_i α_{it}.
- Trained by the Bradley–Terry BCE on σ(score(τ¹) − score(τ²)), with the same held-out
  early stopping and plateau rule as A_φ (:func:`~icml26.paws.advantage.fit_advantage`).
- For IQL every behaviour step is relabelled with r̂_t computed on the aligned segments
  of the training grid (the context the model was trained on; reconstructed: the
  official code's sliding-window context is not reproduced). Sizes are the fast tier's
  (width 32, 1 layer, 2 heads), not the paper's.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from icml26.paws.data import Episodes
from icml26.paws.networks import ObsNorm

__all__ = ["PreferenceTransformer", "relabel_episodes"]


class PreferenceTransformer(nn.Module):
    """Causal Transformer rewards + preference attention weights over one segment."""

    def __init__(
        self,
        obs_dim: int,
        act_dim: int,
        length: int,
        *,
        width: int = 32,
        heads: int = 2,
        layers: int = 1,
        alignment: int | None = None,
    ):
        super().__init__()
        self.obs_dim, self.act_dim, self.length = int(obs_dim), int(act_dim), int(length)
        self.alignment = alignment
        self.obs_norm = ObsNorm(obs_dim)  # identity unless fitted (``normalize_obs``)
        self.embed = nn.Linear(obs_dim + act_dim, width)
        self.position = nn.Parameter(torch.zeros(1, length, width))
        layer = nn.TransformerEncoderLayer(
            width, heads, dim_feedforward=2 * width, dropout=0.0, batch_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.reward_head = nn.Linear(width, 1)
        self.query = nn.Linear(width, width)
        self.key = nn.Linear(width, width)
        mask = torch.triu(torch.full((length, length), float("-inf")), diagonal=1)
        self.register_buffer("causal", mask, persistent=False)

    def rewards_and_weights(
        self, obs: torch.Tensor, act: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """r̂ (B, N) and the importance weights w (B, N) of (B, N, ·) segments."""
        n = obs.shape[-2]
        if n > self.length:
            raise ValueError(f"segments of {n} steps exceed the model's length {self.length}")
        h = self.embed(torch.cat([self.obs_norm(obs), act], dim=-1)) + self.position[:, :n]
        h = self.encoder(h, mask=self.causal[:n, :n])
        reward = self.reward_head(h).squeeze(-1)
        att = torch.softmax(
            self.query(h) @ self.key(h).transpose(-1, -2) / math.sqrt(h.shape[-1]), dim=-1
        )
        return reward, att.mean(dim=-2)

    def forward(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        """The preference score Σ_t w_t r̂_t of each segment (the BCE's logit term)."""
        reward, weight = self.rewards_and_weights(obs, act)
        return (weight * reward).sum(dim=-1)


@torch.no_grad()
def relabel_episodes(model: PreferenceTransformer, episodes: Episodes) -> np.ndarray:
    """r̂_t for every behaviour step (E, H), computed on segments of the training length
    cut on the training grid (a last window ending at the horizon covers any remainder)."""
    n, h = model.length, episodes.horizon
    if n > h:
        raise ValueError(f"segment length {n} is longer than the episode ({h} steps)")
    grid = model.alignment or n
    starts = list(range(0, h - n + 1, grid))
    if starts[-1] + n < h:
        starts.append(h - n)
    dev = next(model.parameters()).device
    out = np.zeros(episodes.obs.shape[:2], np.float64)
    for s in starts:
        o = torch.as_tensor(episodes.obs[:, s : s + n], device=dev)
        a = torch.as_tensor(episodes.act[:, s : s + n], device=dev)
        out[:, s : s + n] = model.rewards_and_weights(o, a)[0].double().cpu().numpy()
    return out
