"""The ESM-2-style transformer encoder that PRISM trains from scratch.

ESM-2 (Lin et al. 2023) as configured by the official code (``esm2_t12_35M_UR50D``,
``random_weights: true``, ``activation_function: swiglu`` with
``fix_swiglu_double_activation: true``):

- token embedding with ESM-2's *token dropout*: ``<mask>`` embeddings are zeroed and
  the rest rescaled by ``(1 - 0.15·0.8) / (1 - observed mask ratio)``;
- pre-LayerNorm blocks: ``x + MHA(LN(x))`` with rotary position embeddings on q and
  k, then ``x + FFN(LN(x))``, with the FFN's first dense layer replaced by SwiGLU,
  ``FFN(x) = W_o (SiLU(x W) ⊙ x V)``;
- a final LayerNorm (``emb_layer_norm_after``).

Optional conditioning added to the input embeddings (official
``_get_gene_conditioned_inputs_embeds``): V/J-gene embeddings (concatenated,
projected to the hidden size, dropout, broadcast over positions) and per-position
region embeddings (projected, dropout).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from icml26.prism.vocab import MASK, PAD

# ESM-2 trains with 15% masking of which 80% become <mask>.
_MASK_RATIO_TRAIN = 0.15 * 0.8


class RotaryEmbedding(nn.Module):
    """Rotary position embedding (Su et al. 2021) as in ESM-2: rotate-half form, base 10⁴."""

    def __init__(self, head_dim: int):
        super().__init__()
        inv_freq = 1.0 / (10000 ** (torch.arange(0, head_dim, 2).float() / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self._cache: tuple[int, torch.device, torch.dtype, torch.Tensor, torch.Tensor] | None = None

    def _cos_sin(self, t: int, device: torch.device, dtype: torch.dtype):
        c = self._cache
        if c is None or c[0] < t or c[1] != device or c[2] != dtype:
            pos = torch.arange(t, device=device, dtype=self.inv_freq.dtype)
            freqs = torch.outer(pos, self.inv_freq)
            emb = torch.cat((freqs, freqs), dim=-1)
            c = (t, device, dtype, emb.cos().to(dtype), emb.sin().to(dtype))
            self._cache = c
        return c[3][:t], c[4][:t]

    def forward(self, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        cos, sin = self._cos_sin(q.shape[-2], q.device, q.dtype)
        half = q.shape[-1] // 2
        # rotate_half(x) = cat(-x2, x1); multiply the two halves by sin separately
        sin_neg = torch.cat((-sin[..., :half], sin[..., half:]), dim=-1)

        # rotate q and k in one call: stack them on a new leading axis
        x = torch.stack((q, k))
        x = x * cos + torch.cat((x[..., half:], x[..., :half]), dim=-1) * sin_neg
        return x[0], x[1]


class SwiGLU(nn.Module):
    """``SiLU(x W) ⊙ (x V)`` — the official replacement of ESM-2's intermediate dense+GELU."""

    def __init__(self, dim_in: int, dim_out: int):
        super().__init__()
        self.w = nn.Linear(dim_in, dim_out)
        self.v = nn.Linear(dim_in, dim_out)
        # official init: v starts small so the block begins close to a plain dense layer
        nn.init.xavier_uniform_(self.v.weight, gain=0.1)
        nn.init.zeros_(self.v.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.silu(self.w(x)) * self.v(x)


class EncoderLayer(nn.Module):
    """One pre-LN ESM-2 block with rotary self-attention and a SwiGLU feed-forward."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float, swiglu: bool):
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model {d_model} is not divisible by n_heads {n_heads}")
        self.n_heads, self.head_dim = n_heads, d_model // n_heads
        self.ln_attn = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.rotary = RotaryEmbedding(self.head_dim)
        self.ln_ffn = nn.LayerNorm(d_model)
        self.ffn_in = (
            SwiGLU(d_model, d_ff) if swiglu else nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU())
        )
        self.ffn_out = nn.Linear(d_ff, d_model)
        self.dropout = dropout

    def forward(self, x: torch.Tensor, key_mask: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        h = self.ln_attn(x)
        q, k, v = self.qkv(h).view(b, t, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k = self.rotary(q, k)
        drop = self.dropout if self.training else 0.0
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=key_mask, dropout_p=drop)
        x = x + F.dropout(self.out(a.transpose(1, 2).reshape(b, t, d)), drop, self.training)
        h = self.ffn_out(self.ffn_in(self.ln_ffn(x)))
        return x + F.dropout(h, drop, self.training)


class Backbone(nn.Module):
    """Token embedding (+ optional gene/region conditioning) → N ESM-2 blocks → final LN."""

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        n_layers: int,
        n_heads: int,
        d_ff: int,
        *,
        dropout: float = 0.0,
        swiglu: bool = True,
        token_dropout: bool = True,
        n_v_genes: int = 0,
        n_j_genes: int = 0,
        gene_dim: int = 64,
        gene_dropout: float = 0.1,
        n_regions: int = 0,
        region_dim: int = 32,
        region_dropout: float = 0.1,
    ):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model, padding_idx=PAD)
        self.token_dropout = token_dropout
        self.layers = nn.ModuleList(
            EncoderLayer(d_model, n_heads, d_ff, dropout, swiglu) for _ in range(n_layers)
        )
        self.ln_final = nn.LayerNorm(d_model)
        self.v_gene = nn.Embedding(n_v_genes, gene_dim) if n_v_genes else None
        self.j_gene = nn.Embedding(n_j_genes, gene_dim) if n_j_genes else None
        self.gene_proj = nn.Linear(2 * gene_dim, d_model) if n_v_genes and n_j_genes else None
        self.gene_dropout = nn.Dropout(gene_dropout)
        self.region = nn.Embedding(n_regions, region_dim) if n_regions else None
        self.region_proj = nn.Linear(region_dim, d_model) if n_regions else None
        self.region_dropout = nn.Dropout(region_dropout)
        self.apply(_init_weights)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        *,
        v_gene_ids: torch.Tensor | None = None,
        j_gene_ids: torch.Tensor | None = None,
        region_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        if attention_mask is None:
            attention_mask = input_ids != PAD
        attention_mask = attention_mask.bool()
        x = self.embed(input_ids)
        if self.token_dropout:
            is_mask = input_ids == MASK
            x = x.masked_fill(is_mask.unsqueeze(-1), 0.0)
            length = attention_mask.sum(-1).clamp(min=1)
            observed = is_mask.sum(-1).to(x.dtype) / length
            x = x * ((1 - _MASK_RATIO_TRAIN) / (1 - observed).clamp(min=1e-3))[:, None, None]
        if self.region is not None and region_ids is not None:
            x = x + self.region_dropout(self.region_proj(self.region(region_ids)))
        if self.gene_proj is not None and v_gene_ids is not None and j_gene_ids is not None:
            g = torch.cat([self.v_gene(v_gene_ids), self.j_gene(j_gene_ids)], dim=-1)
            x = x + self.gene_dropout(self.gene_proj(g)).unsqueeze(1)
        x = x * attention_mask.unsqueeze(-1).to(x.dtype)
        key_mask = attention_mask[:, None, None, :]
        for layer in self.layers:
            x = layer(x, key_mask)
        return self.ln_final(x)


def _init_weights(module: nn.Module) -> None:
    # BERT/ESM initialisation: N(0, 0.02) for dense and embedding weights.
    if isinstance(module, nn.Linear) and not getattr(module, "_keep_init", False):
        nn.init.normal_(module.weight, std=0.02)
        if module.bias is not None:
            nn.init.zeros_(module.bias)
    elif isinstance(module, nn.Embedding):
        nn.init.normal_(module.weight, std=0.02)
        if module.padding_idx is not None:
            with torch.no_grad():
                module.weight[module.padding_idx].zero_()
    elif isinstance(module, SwiGLU):
        nn.init.xavier_uniform_(module.v.weight, gain=0.1)
        nn.init.zeros_(module.v.bias)


def count_parameters(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())
