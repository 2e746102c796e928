"""The exchangeable MCAB autoencoder of scLDM (stage A; official ``vae.TransformerVAE``,
``nnets.Encoder``/``Decoder``, ``layers.InputTransformerVAE``).

Encoder (permutation-invariant pooling)::

    token_g = gene_embedding(g) · log1p(c_g)                 # expressed genes only
    H = MCAB(queries = m inducing points, keys/values = tokens)   # (B, m, E)
    H = n_layer self-attention Blocks(H)
    Z = LayerNorm_no_affine(Linear(E → D)(H))                 # (B, m, D)

Decoder (permutation-equivariant unpooling)::

    H = Blocks(Linear(D → E)(LayerNorm_no_affine(Z)))
    h_g = MCAB(queries = gene_embedding(g) for every gene, keys/values = H)
    mu_g = softmax_g(Linear(h_g)) · library,  theta_g = exp(theta[g])

Loss: ``-Σ_g log NB(c_g | mu_g, theta_g)`` averaged over cells (the released code,
``kl_weight = 0``: a deterministic autoencoder whose no-affine LayerNorm keeps the
latent N(0, 1)-like). With ``kl_weight > 0`` the encoder also outputs a log-variance
and the loss is the paper's β-ELBO with a N(0, I) prior (reconstructed: the paper
writes the ELBO, the released code does not train it).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

from icml26.scldm.likelihood import NegativeBinomialHead, nb_log_prob
from icml26.scldm.mcab import MCAB
from icml26.scldm.tokenize import expressed_tokens
from icml26.scldm.transformer import Block, sincos_positions

COUNT_ENCODINGS = ("log1p", "projconcat")


@dataclass(frozen=True)
class AutoencoderConfig:
    """Architecture of the MCAB autoencoder; defaults are ``vae_base.yaml``.

    ``n_latent_tokens`` is m (``n_inducing_points``) and ``latent_dim`` is D
    (``n_embed_latent``); the latent of a cell is m × D.

    ``count_encoding`` is the official ``agg_func``: "log1p" (released default,
    ``gene_embedding · log1p(count)``) or "projconcat" (``Linear([gene_embedding,
    log1p(count)])``). Note that the pre-LN of the pooling MCAB normalises each token, so
    under "log1p" the encoder sees *which* genes are expressed, not how much
    (LN(a·v) = LN(v) for a > 0); "projconcat" keeps the count magnitude.
    """

    n_embed: int = 32
    n_latent_tokens: int = 16
    latent_dim: int = 16
    n_layer: int = 8
    n_head: int = 8
    n_head_cross: int = 4
    dropout: float = 0.0
    bias: bool = False
    multiple_of: int = 4
    layernorm_eps: float = 1e-8
    positional_encoding: bool = False
    mask_padding: bool = True
    kl_weight: float = 0.0
    count_encoding: str = "log1p"

    def __post_init__(self) -> None:
        for name in ("n_embed", "n_latent_tokens", "latent_dim", "n_head", "n_head_cross"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.n_layer < 0:
            raise ValueError(f"n_layer must be >= 0, got {self.n_layer}")
        for heads in (self.n_head, self.n_head_cross):
            if self.n_embed % heads:
                raise ValueError(f"n_embed ({self.n_embed}) must be divisible by {heads} heads")
        if self.kl_weight < 0:
            raise ValueError(f"kl_weight must be >= 0, got {self.kl_weight}")
        if self.count_encoding not in COUNT_ENCODINGS:
            raise ValueError(
                f"count_encoding must be one of {COUNT_ENCODINGS}, got {self.count_encoding!r}"
            )

    @property
    def variational(self) -> bool:
        return self.kl_weight > 0

    def to_dict(self) -> dict:
        return asdict(self)


class MCABAutoencoder(nn.Module):
    """MCAB encoder + decoder + negative-binomial head over a vocabulary of ``n_genes``."""

    def __init__(self, n_genes: int, config: AutoencoderConfig | None = None):
        super().__init__()
        cfg = config or AutoencoderConfig()
        self.config, self.n_genes = cfg, n_genes
        E, m, D = cfg.n_embed, cfg.n_latent_tokens, cfg.latent_dim
        block = {
            "dropout": cfg.dropout,
            "bias": cfg.bias,
            "multiple_of": cfg.multiple_of,
            "layernorm_eps": cfg.layernorm_eps,
        }
        # Shared by the input tokens and the decoder queries (``shared_embedding: true``).
        self.gene_embedding = nn.Embedding(n_genes + 1, E)
        self.count_mix = nn.Linear(2 * E, E) if cfg.count_encoding == "projconcat" else None
        self.encoder_pool = MCAB(E, cfg.n_head_cross, n_inducing_points=m, **block)
        # The released Encoder allocates a frozen zero buffer here and never fills it.
        positions = sincos_positions(E, m) if cfg.positional_encoding else torch.zeros(m, E)
        self.register_buffer("positions", positions[None], persistent=False)
        self.encoder_blocks = nn.ModuleList(
            Block(E, cfg.n_head, **block) for _ in range(cfg.n_layer)
        )
        self.to_latent = nn.Linear(E, D, bias=cfg.bias)
        self.latent_norm = nn.LayerNorm(D, eps=cfg.layernorm_eps, elementwise_affine=False)
        self.to_logvar = nn.Linear(E, D) if cfg.variational else None
        self.from_latent = nn.Sequential(
            nn.LayerNorm(D, eps=cfg.layernorm_eps, elementwise_affine=False),
            nn.Linear(D, E, bias=cfg.bias),
        )
        self.decoder_blocks = nn.ModuleList(
            Block(E, cfg.n_head, **block) for _ in range(cfg.n_layer)
        )
        self.decoder_unpool = MCAB(E, cfg.n_head_cross, n_inducing_points=0, **block)
        self.head = NegativeBinomialHead(n_genes, E)

    @property
    def latent_shape(self) -> tuple[int, int]:
        return self.config.n_latent_tokens, self.config.latent_dim

    # -- encoder --------------------------------------------------------------------
    def encode_tokens(
        self, genes: torch.Tensor, values: torch.Tensor, mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Gene tokens (B, S) -> latent mean (B, m, D) and log-variance (or None)."""
        emb, logc = self.gene_embedding(genes), torch.log1p(values).unsqueeze(-1)
        if self.count_mix is None:
            tokens = emb * logc
        else:
            tokens = self.count_mix(torch.cat([emb, logc.expand_as(emb)], dim=-1))
        key_mask = mask if self.config.mask_padding else None
        h = self.encoder_pool(tokens, key_padding_mask=key_mask) + self.positions
        for blk in self.encoder_blocks:
            h = blk(h)
        mean = self.latent_norm(self.to_latent(h))
        if self.to_logvar is None:
            return mean, None
        # log sigma clipped to [-7, 5] as in the official GaussianLinearLayer
        logvar = 2 * F.hardtanh(self.to_logvar(h), -7.0, 5.0)
        return mean, logvar

    def encode(
        self, counts: torch.Tensor, gene_ids: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Counts (B, G) over ``gene_ids`` (G,) -> latent mean and log-variance."""
        return self.encode_tokens(*expressed_tokens(counts, gene_ids))

    # -- decoder --------------------------------------------------------------------
    def decode(
        self, z: torch.Tensor, gene_ids: torch.Tensor, library_size: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Latent (B, m, D) -> NB mean and inverse dispersion (B, G) for ``gene_ids``."""
        h = self.from_latent(z)
        for blk in self.decoder_blocks:
            h = blk(h)
        queries = self.gene_embedding(gene_ids)[None]  # (1, G, E), shared by the batch
        h_genes = self.decoder_unpool(h, queries)
        return self.head(h_genes, gene_ids, library_size.reshape(-1, 1))

    # -- training objective -----------------------------------------------------------
    def forward(
        self, counts: torch.Tensor, gene_ids: torch.Tensor, generator: torch.Generator | None = None
    ) -> dict[str, torch.Tensor]:
        """The training objective (so that a DDP-wrapped model syncs its gradients)."""
        return self.loss(counts, gene_ids, generator)

    def loss(
        self, counts: torch.Tensor, gene_ids: torch.Tensor, generator: torch.Generator | None = None
    ) -> dict[str, torch.Tensor]:
        """NB reconstruction (+ β·KL when variational), summed over genes, mean over cells."""
        mean, logvar = self.encode(counts, gene_ids)
        if logvar is None:
            z, kl = mean, torch.zeros((), device=counts.device)
        else:
            eps = torch.randn(mean.shape, generator=generator, device=mean.device)
            z = mean + torch.exp(0.5 * logvar) * eps
            kl = 0.5 * (mean.square() + logvar.exp() - 1.0 - logvar).flatten(1).sum(1).mean()
        library = counts.sum(dim=1, keepdim=True)
        mu, theta = self.decode(z, gene_ids, library)
        nll = -nb_log_prob(counts, mu, theta).sum(dim=1).mean()
        return {"loss": nll + self.config.kl_weight * kl, "nll": nll, "kl": kl}
