"""Transformer parts shared by the MCAB autoencoder and the DiT (official ``layers.py``).

- :class:`SwiGLU`: the gated MLP, hidden size ``multiple_of``-rounded ``2/3 · 4E``;
- :class:`SelfAttention` and :class:`Block`: pre-LN self-attention blocks, with the
  adaLN-Zero modulation of DiT when ``use_adaln`` is set;
- :func:`sincos_positions`: fixed 1-D sin-cos positions.

Attention is ``torch.nn.functional.scaled_dot_product_attention`` (the released code
uses ``flex_attention``, which is slow or unsupported on CPU in eager mode); both
compute the same softmax attention.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


def swiglu_hidden(n_embed: int, multiple_of: int) -> int:
    """Hidden width of the SwiGLU MLP: ``int(2/3 · 4E)`` rounded up to ``multiple_of``."""
    hidden = int(2 * (4 * n_embed) / 3)
    return multiple_of * ((hidden + multiple_of - 1) // multiple_of)


class SwiGLU(nn.Module):
    """``c_proj(silu(w1 x) * w2 x)`` without biases (official ``layers.MLP``)."""

    def __init__(self, n_embed: int, multiple_of: int = 4):
        super().__init__()
        hidden = swiglu_hidden(n_embed, multiple_of)
        self.w1 = nn.Linear(n_embed, hidden, bias=False)
        self.w2 = nn.Linear(n_embed, hidden, bias=False)
        self.c_proj = nn.Linear(hidden, n_embed, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c_proj(F.silu(self.w1(x)) * self.w2(x))


def split_heads(x: torch.Tensor, n_head: int) -> torch.Tensor:
    """(B, S, E) -> (B, H, S, E/H)."""
    b, s, e = x.shape
    return x.view(b, s, n_head, e // n_head).transpose(1, 2)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """(B, H, S, E/H) -> (B, S, E)."""
    b, h, s, d = x.shape
    return x.transpose(1, 2).reshape(b, s, h * d)


class SelfAttention(nn.Module):
    """Multi-head self-attention with a fused QKV projection."""

    def __init__(self, n_embed: int, n_head: int, *, dropout: float = 0.0, bias: bool = False):
        super().__init__()
        if n_embed % n_head:
            raise ValueError(f"n_embed ({n_embed}) must be divisible by n_head ({n_head})")
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embed, 3 * n_embed, bias=bias)
        self.c_proj = nn.Linear(n_embed, n_embed, bias=bias)
        self.resid_dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.c_attn(x).chunk(3, dim=-1)
        q, k, v = (split_heads(t, self.n_head) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v)
        return self.resid_dropout(self.c_proj(merge_heads(y)))


def modulate(x: torch.Tensor, shift: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """adaLN modulation: ``x · (1 + scale) + shift``."""
    return x * (1 + scale) + shift


class Block(nn.Module):
    """Pre-LN transformer block: ``x += attn(LN x)``, ``x += mlp(LN x)``.

    With ``use_adaln`` (DiT), a condition vector ``c`` gives shift, scale and gate for
    both sub-layers (adaLN-Zero: the projection is zero-initialised by the DiT).
    """

    def __init__(
        self,
        n_embed: int,
        n_head: int,
        *,
        dropout: float = 0.0,
        bias: bool = False,
        multiple_of: int = 4,
        layernorm_eps: float = 1e-8,
        use_adaln: bool = False,
        elementwise_affine: bool = True,
    ):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embed, eps=layernorm_eps, elementwise_affine=elementwise_affine)
        self.ln_2 = nn.LayerNorm(n_embed, eps=layernorm_eps, elementwise_affine=elementwise_affine)
        self.attn = SelfAttention(n_embed, n_head, dropout=dropout, bias=bias)
        self.mlp = SwiGLU(n_embed, multiple_of)
        self.use_adaln = use_adaln
        if use_adaln:
            self.adaln_modulation = nn.Sequential(nn.SiLU(), nn.Linear(n_embed, 6 * n_embed))

    def forward(self, x: torch.Tensor, condition: torch.Tensor | None = None) -> torch.Tensor:
        if not self.use_adaln:
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))
        if condition is None:
            raise ValueError("an adaLN block needs a condition vector")
        shift_a, scale_a, gate_a, shift_m, scale_m, gate_m = self.adaln_modulation(condition).chunk(
            6, dim=-1
        )
        x = x + gate_a * self.attn(modulate(self.ln_1(x), shift_a, scale_a))
        return x + gate_m * self.mlp(modulate(self.ln_2(x), shift_m, scale_m))


def sincos_positions(n_embed: int, seq_len: int) -> torch.Tensor:
    """Fixed 1-D sin-cos positions (seq_len, n_embed), as ``get_1d_sincos_pos_embed``."""
    if n_embed % 2:
        raise ValueError(f"sin-cos positions need an even dimension, got {n_embed}")
    omega = 1.0 / 10000 ** (np.arange(n_embed // 2, dtype=np.float64) / (n_embed / 2.0))
    angles = np.arange(seq_len, dtype=np.float64)[:, None] * omega[None]
    return torch.from_numpy(np.concatenate([np.sin(angles), np.cos(angles)], axis=1)).float()


def timestep_frequencies(t: torch.Tensor, dim: int, max_period: float = 10000.0) -> torch.Tensor:
    """Sinusoidal features of scalar times ``t`` (B,) -> (B, dim), as in DiT/SiT."""
    half = dim // 2
    freqs = torch.exp(
        -math.log(max_period) * torch.arange(half, dtype=torch.float32, device=t.device) / half
    )
    args = t[:, None].float() * freqs[None]
    emb = torch.cat([torch.cos(args), torch.sin(args)], dim=-1)
    if dim % 2:
        emb = torch.cat([emb, torch.zeros_like(emb[:, :1])], dim=-1)
    return emb
