"""The Diffusion Transformer on latent tokens (official ``nnets.DiT``, after Peebles &
Xie, 2023, and SiT).

Input: noisy latents (B, m, D), times t ∈ [0, 1] and class indices per attribute.
``Linear(D → d)`` plus fixed sin-cos positions over the m tokens, then ``n_layer``
adaLN-Zero blocks conditioned on ``c = t_embedding + Σ_k class_embedding_k``, then an
adaLN final layer back to D. Each attribute k has an ``nn.Embedding(n_k + 1, d)``
whose last row is the "null" class used for classifier-free guidance.

``standardize_latents`` (not in the released code) trains the flow on latents shifted
and scaled per coordinate to zero mean and unit variance over the training cells (the
latent-scaling step of latent diffusion, Rombach et al. 2022); samples are mapped back
before decoding. The released per-token LayerNorm fixes each token's norm, not the
spread across cells, which can be far below the unit-variance noise.

Condition dropout during training (``condition_strategy``):

- ``mutually_exclusive`` (observational data): per batch ONE attribute is picked at
  random, the others are set to null, then each sample's picked attribute is nulled
  with probability ``cfg_dropout``;
- ``joint`` (perturbation data): all attributes are kept together and nulled together
  per sample with probability ``cfg_dropout``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Literal

import torch
from torch import nn

from icml26.scldm.transformer import Block, modulate, sincos_positions, timestep_frequencies

Strategy = Literal["mutually_exclusive", "joint"]


@dataclass(frozen=True)
class DiTConfig:
    """DiT architecture and condition dropout; defaults are ``ldm_base.yaml``."""

    n_embed: int = 256
    n_layer: int = 8
    n_head: int = 8
    dropout: float = 0.0
    bias: bool = True
    multiple_of: int = 4
    layernorm_eps: float = 1e-8
    cfg_dropout: float = 0.8
    condition_strategy: Strategy = "mutually_exclusive"
    frequency_embedding_size: int = 256
    standardize_latents: bool = False

    def __post_init__(self) -> None:
        if self.n_embed < 2 or self.n_embed % 2 or self.n_embed % self.n_head:
            raise ValueError(
                f"n_embed must be even and divisible by n_head, got {self.n_embed}/{self.n_head}"
            )
        if not 0.0 <= self.cfg_dropout <= 1.0:
            raise ValueError(f"cfg_dropout must lie in [0, 1], got {self.cfg_dropout}")
        if self.condition_strategy not in ("mutually_exclusive", "joint"):
            raise ValueError(
                "condition_strategy must be 'mutually_exclusive' or 'joint', "
                f"got {self.condition_strategy!r}"
            )

    def to_dict(self) -> dict:
        return asdict(self)


class TimestepEmbedder(nn.Module):
    """Sinusoidal features of t followed by a two-layer SiLU MLP."""

    def __init__(self, hidden: int, frequency_embedding_size: int = 256):
        super().__init__()
        self.frequency_embedding_size = frequency_embedding_size
        self.mlp = nn.Sequential(
            nn.Linear(frequency_embedding_size, hidden), nn.SiLU(), nn.Linear(hidden, hidden)
        )

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        return self.mlp(timestep_frequencies(t, self.frequency_embedding_size))


class FinalLayer(nn.Module):
    """No-affine LayerNorm, adaLN shift/scale, Linear(d → D)."""

    def __init__(self, n_embed: int, n_out: int, *, bias: bool, layernorm_eps: float):
        super().__init__()
        self.norm = nn.LayerNorm(n_embed, elementwise_affine=False, eps=layernorm_eps)
        self.linear = nn.Linear(n_embed, n_out, bias=bias)
        self.adaln_modulation = nn.Sequential(nn.SiLU(), nn.Linear(n_embed, 2 * n_embed, bias=bias))

    def forward(self, x: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        shift, scale = self.adaln_modulation(c).chunk(2, dim=-1)
        return self.linear(modulate(self.norm(x), shift, scale))


class DiT(nn.Module):
    """Velocity network ``v_θ(x_t, t, c)`` on (B, m, D) latent tokens.

    ``class_vocab_sizes`` maps each condition attribute to its number of classes
    (may be empty: an unconditional model).
    """

    def __init__(
        self,
        seq_len: int,
        input_dim: int,
        class_vocab_sizes: Mapping[str, int] | None = None,
        config: DiTConfig | None = None,
    ):
        super().__init__()
        cfg = config or DiTConfig()
        self.config, self.seq_len, self.input_dim = cfg, seq_len, input_dim
        self.class_vocab_sizes = dict(sorted((class_vocab_sizes or {}).items()))
        d = cfg.n_embed
        self.class_embeddings = nn.ModuleDict(
            {k: nn.Embedding(n + 1, d) for k, n in self.class_vocab_sizes.items()}
        )
        self.t_embedder = TimestepEmbedder(d, cfg.frequency_embedding_size)
        self.register_buffer("pos_embed", sincos_positions(d, seq_len)[None], persistent=False)
        self.input_proj = nn.Linear(input_dim, d, bias=cfg.bias)
        self.blocks = nn.ModuleList(
            Block(
                d,
                cfg.n_head,
                dropout=cfg.dropout,
                bias=cfg.bias,
                multiple_of=cfg.multiple_of,
                layernorm_eps=cfg.layernorm_eps,
                use_adaln=True,
                elementwise_affine=False,
            )
            for _ in range(cfg.n_layer)
        )
        self.final_layer = FinalLayer(d, input_dim, bias=cfg.bias, layernorm_eps=cfg.layernorm_eps)
        self._initialize()

    def _initialize(self) -> None:
        """DiT initialisation: xavier Linear, N(0, 0.02) embeddings, adaLN-Zero."""

        def basic(module: nn.Module) -> None:
            if isinstance(module, nn.Linear):
                nn.init.xavier_uniform_(module.weight)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)

        self.apply(basic)
        for emb in self.class_embeddings.values():
            nn.init.normal_(emb.weight, std=0.02)
        nn.init.normal_(self.t_embedder.mlp[0].weight, std=0.02)
        nn.init.normal_(self.t_embedder.mlp[2].weight, std=0.02)
        zero = [blk.adaln_modulation[-1] for blk in self.blocks]
        zero += [self.final_layer.adaln_modulation[-1], self.final_layer.linear]
        for lin in zero:
            nn.init.zeros_(lin.weight)
            if lin.bias is not None:
                nn.init.zeros_(lin.bias)

    def null_condition(self, batch: int, device: torch.device) -> dict[str, torch.Tensor]:
        """Every attribute at its null class (the unconditional model)."""
        return {
            k: torch.full((batch,), n, dtype=torch.long, device=device)
            for k, n in self.class_vocab_sizes.items()
        }

    def drop_conditions(
        self, condition: Mapping[str, torch.Tensor], generator: torch.Generator | None = None
    ) -> dict[str, torch.Tensor]:
        """Training-time condition dropout under the configured strategy."""
        if not self.class_vocab_sizes:
            return {}
        batch = next(iter(condition.values())).shape[0]
        device = next(iter(condition.values())).device
        null = self.null_condition(batch, device)
        drop = torch.rand(batch, generator=generator, device=device) < self.config.cfg_dropout
        available = [k for k in self.class_vocab_sizes if k in condition]
        if self.config.condition_strategy == "joint":
            return {
                k: torch.where(drop, null[k], condition[k]) if k in condition else null[k]
                for k in self.class_vocab_sizes
            }
        pick = available[
            int(torch.randint(len(available), (1,), generator=generator, device=device).item())
        ]
        out = dict(null)
        out[pick] = torch.where(drop, null[pick], condition[pick])
        return out

    def condition_embedding(self, condition: Mapping[str, torch.Tensor]) -> torch.Tensor | None:
        if not self.class_vocab_sizes:
            return None
        return sum(self.class_embeddings[k](condition[k]) for k in self.class_vocab_sizes)

    def forward(
        self, x: torch.Tensor, t: torch.Tensor, condition: Mapping[str, torch.Tensor] | None = None
    ) -> torch.Tensor:
        """``x`` (B, m, D), ``t`` (B,), ``condition`` {attribute: (B,) class index; the
        null index = vocabulary size}; missing attributes are null."""
        c = self.t_embedder(t)
        if self.class_vocab_sizes:
            full = self.null_condition(x.shape[0], x.device)
            full.update({k: v for k, v in (condition or {}).items() if k in full})
            c = c + self.condition_embedding(full)
        c = c.unsqueeze(1)
        h = self.input_proj(x) + self.pos_embed
        for blk in self.blocks:
            h = blk(h, c)
        return self.final_layer(h, c)
