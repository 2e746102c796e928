"""The Multi-head Cross-Attention Block (MCAB), scLDM §3 (official ``CrossAttentionBlock``).

One block serves two roles:

- **pooling** (encoder): learned inducing points are the queries, the gene tokens the
  keys/values. The output (m tokens) does not depend on the order of the genes:
  permutation-invariant.
- **unpooling** (decoder): the gene embeddings are the queries, the m latent tokens the
  keys/values. Output row g depends only on gene g's query: permutation-equivariant.

The block is pre-LN with the residual taken from the queries::

    out = q + CA(keys/values = LN(x), queries = LN_q(q))
    out = out + SwiGLU(LN(out))

Attention is queries × keys, so memory is O(m · n_genes) in both roles, never
quadratic in the number of genes.

``key_padding_mask`` (True = a real token) removes padded gene tokens from the
softmax. The released encoder does not mask: its padded tokens are zero vectors, so
after LayerNorm they equal the LN bias and take part in the attention. We mask, which
makes the encoder exactly invariant to the amount of padding (``mask_padding=False``
in :class:`~icml26.scldm.autoencoder.AutoencoderConfig` restores the released choice).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from icml26.scldm.transformer import SwiGLU, merge_heads, modulate, split_heads


class CrossAttention(nn.Module):
    """Multi-head attention of queries ``q`` (B, M, E) over keys/values from ``x`` (B, S, E)."""

    def __init__(self, n_embed: int, n_head: int, *, dropout: float = 0.0, bias: bool = False):
        super().__init__()
        if n_embed % n_head:
            raise ValueError(f"n_embed ({n_embed}) must be divisible by n_head ({n_head})")
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embed, 2 * n_embed, bias=bias)  # keys, values
        self.c_attn_q = nn.Linear(n_embed, n_embed, bias=bias)
        self.c_proj = nn.Linear(n_embed, n_embed, bias=bias)
        self.resid_dropout = nn.Dropout(dropout)

    def forward(
        self, x: torch.Tensor, q: torch.Tensor, key_padding_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        k, v = self.c_attn(x).chunk(2, dim=-1)
        q = self.c_attn_q(q)
        if q.shape[0] != k.shape[0]:  # shared queries (1, M, E) broadcast over the batch
            q = q.expand(k.shape[0], -1, -1)
        q, k, v = (split_heads(t, self.n_head) for t in (q, k, v))
        mask = None if key_padding_mask is None else key_padding_mask[:, None, None, :]
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.resid_dropout(self.c_proj(merge_heads(y)))


class MCAB(nn.Module):
    """Multi-head Cross-Attention Block.

    Parameters
    ----------
    n_embed, n_head
        Width and number of heads of the cross-attention.
    n_inducing_points
        m > 0: learned queries (encoder pooling). 0: queries are passed in (decoder).
    use_adaln
        adaLN modulation by a condition vector (off in the released autoencoder).
    """

    def __init__(
        self,
        n_embed: int,
        n_head: int,
        *,
        n_inducing_points: int = 0,
        dropout: float = 0.0,
        bias: bool = False,
        multiple_of: int = 4,
        layernorm_eps: float = 1e-8,
        use_adaln: bool = False,
    ):
        super().__init__()
        self.inducing_points = (
            nn.Parameter(torch.randn(n_inducing_points, n_embed)) if n_inducing_points else None
        )
        self.ln_1 = nn.LayerNorm(n_embed, eps=layernorm_eps)
        self.ln_1q = nn.LayerNorm(n_embed, eps=layernorm_eps)
        self.attn = CrossAttention(n_embed, n_head, dropout=dropout, bias=bias)
        self.ln_2 = nn.LayerNorm(n_embed, eps=layernorm_eps)
        self.mlp = SwiGLU(n_embed, multiple_of)
        self.use_adaln = use_adaln
        if use_adaln:
            self.adaln_modulation = nn.Sequential(nn.SiLU(), nn.Linear(n_embed, 6 * n_embed))
            self.adaln_modulation_q = nn.Sequential(nn.SiLU(), nn.Linear(n_embed, 2 * n_embed))

    def forward(
        self,
        x: torch.Tensor,
        q: torch.Tensor | None = None,
        *,
        key_padding_mask: torch.Tensor | None = None,
        condition: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """``x`` (B, S, E) keys/values; ``q`` (B or 1, M, E) queries -> (B, M, E)."""
        if q is None:
            if self.inducing_points is None:
                raise ValueError("an MCAB without inducing points needs queries q")
            q = self.inducing_points[None]
        # Queries shared by the batch stay (1, M, E): LN_q and the query projection run
        # once, and the residual broadcasts.
        if self.use_adaln:
            if condition is None:
                raise ValueError("an adaLN MCAB needs a condition vector")
            shift_a, scale_a, gate_a, shift_m, scale_m, gate_m = self.adaln_modulation(
                condition
            ).chunk(6, dim=-1)
            shift_q, scale_q = self.adaln_modulation_q(condition).chunk(2, dim=-1)
            out = q + gate_a * self.attn(
                modulate(self.ln_1(x), shift_a, scale_a),
                modulate(self.ln_1q(q), shift_q, scale_q),
                key_padding_mask,
            )
            return out + gate_m * self.mlp(modulate(self.ln_2(out), shift_m, scale_m))
        out = q + self.attn(self.ln_1(x), self.ln_1q(q), key_padding_mask)
        return out + self.mlp(self.ln_2(out))
