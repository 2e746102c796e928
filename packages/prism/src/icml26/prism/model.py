"""PRISM and its matched PRISM-less ablation (official ``src/prism/model.py``, "v34").

PRISM's forward pass (``_forward_multihead``), for backbone states ``h``:

1. origin head: ``m = Dropout(Linear(h))`` — one GL/NGL logit per position;
2. conditioning: ``h' = h + W_proj · stopgrad(m)``;
3. AA head on ``h'`` (ESM LM-head: Dense → GELU → LayerNorm → decoder + bias): 33 logits;
4. α-gate: ``α = σ(Linear(h')) ∈ [0, 1]`` (initialised near 0.5);
5. 53-way log-space logits (multiplicative gating, ``m`` detached again)::

       final[A] = (log softmax(AA)_A + α · log σ(−m)) / T      uppercase (GL) A
       final[a] = (log softmax(AA)_A + α · log σ(+m)) / T      lowercase (NGL) a

   with ``T = 1`` during the temperature warm-up and ``T = 0.5`` after it.

The *dual-head* variant ("v35") has separate GL and NGL AA heads: the uppercase
columns read the GL head, the lowercase columns the NGL head.

The normalised 53-way distribution is ``softmax(final)``. Because the gate factor is
shared by the 20 residues of one case, it marginalises over case exactly to the
tempered AA distribution ``softmax(log softmax(AA)_residues / T)``; at α = 1, T = 1 it
factorises as ``P(aa) · P(origin)``.

PRISM-less is the same backbone and AA head trained as a plain 33-token masked LM
(official ``train_pure_esm.py``): no origin head, no gate, no 53-way output.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from icml26.prism.backbone import Backbone, count_parameters
from icml26.prism.vocab import GL_IDS, N_ESM2, NGL_IDS, VOCAB_SIZE

#: stand-in for log 0 in the 53-way logits (the official code fills with -1e9).
NEG = -1e9
KINDS = ("prism", "prismless")


@dataclass(frozen=True)
class ModelConfig:
    """Architecture of PRISM (``kind="prism"``) or PRISM-less (``kind="prismless"``)."""

    kind: str = "prism"
    n_layers: int = 2
    d_model: int = 64
    n_heads: int = 4
    d_ff: int = 256
    dropout: float = 0.0
    swiglu: bool = True
    token_dropout: bool = True
    origin_dropout: float = 0.1
    gating_temperature: float = 0.5
    dual_heads: bool = False
    fixed_alpha: float | None = None
    n_v_genes: int = 0
    n_j_genes: int = 0
    gene_dim: int = 64
    gene_dropout: float = 0.1
    n_regions: int = 0
    region_dim: int = 32
    # longest input in tokens, special tokens included (ESM-2's 1,026 positions); rotary
    # attention has no table, but attention memory grows with its square, and longer
    # inputs are refused at scoring with a clear error
    max_length: int = 1026

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        for name in ("n_layers", "d_model", "n_heads", "d_ff", "max_length"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} not divisible by n_heads {self.n_heads}")
        if (self.d_model // self.n_heads) % 2:
            raise ValueError("the head dimension must be even for rotary embeddings")
        if not self.gating_temperature > 0:
            raise ValueError(f"gating_temperature must be > 0, got {self.gating_temperature}")
        if self.fixed_alpha is not None and not 0 <= self.fixed_alpha <= 1:
            raise ValueError(f"fixed_alpha must lie in [0, 1], got {self.fixed_alpha}")

    @classmethod
    def tiny(cls, **overrides) -> ModelConfig:
        """A CPU-sized model: 2 layers, d = 64, 4 heads (≈ 0.1M parameters)."""
        return cls(**{"n_layers": 2, "d_model": 64, "n_heads": 4, "d_ff": 256, **overrides})

    @classmethod
    def esm2_35m(cls, **overrides) -> ModelConfig:
        """ESM-2 t12 35M: 12 layers, d = 480, 20 heads, FFN 1920 (the paper's size)."""
        return cls(**{"n_layers": 12, "d_model": 480, "n_heads": 20, "d_ff": 1920, **overrides})

    def replace(self, **changes) -> ModelConfig:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> ModelConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown model config fields: {sorted(unknown)}")
        return cls(**data)


class AAHead(nn.Module):
    """ESM LM head: Dense → GELU → LayerNorm → decoder (no bias) + bias, 33 logits."""

    def __init__(self, d_model: int, n_out: int = N_ESM2):
        super().__init__()
        self.dense = nn.Linear(d_model, d_model)
        self.norm = nn.LayerNorm(d_model)
        self.decoder = nn.Linear(d_model, n_out, bias=False)
        self.bias = nn.Parameter(torch.zeros(n_out))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.norm(F.gelu(self.dense(h)))) + self.bias


@dataclass
class PrismOutput:
    """Outputs of one forward pass (shapes for a (B, T) input)."""

    aa_logits: torch.Tensor  # (B, T, 33) GL AA head
    hidden: torch.Tensor  # (B, T, H) backbone states (unconditioned)
    origin_logits: torch.Tensor | None = None  # (B, T) GL/NGL logit; > 0 leans NGL
    alpha: torch.Tensor | None = None  # (B, T, 1)
    final_logits: torch.Tensor | None = None  # (B, T, 53) gated log-space logits / T
    aa_logits_ngl: torch.Tensor | None = None  # (B, T, 33) dual-head variant only

    def log_probs(self) -> torch.Tensor:
        """Normalised log-probabilities: 53-way for PRISM, 33-way for PRISM-less."""
        if self.final_logits is not None:
            return F.log_softmax(self.final_logits.float(), dim=-1)
        return F.log_softmax(self.aa_logits.float(), dim=-1)


def gated_logits(
    aa_logits: torch.Tensor,
    origin_logits: torch.Tensor,
    alpha: torch.Tensor,
    temperature: float | torch.Tensor = 1.0,
    aa_logits_ngl: torch.Tensor | None = None,
) -> torch.Tensor:
    """The 53-way log-space logits of multiplicative α-gating (official
    ``_construct_53_vocab_logits_multiplicative`` / ``_dual_heads``).

    ``origin_logits`` should already be detached by the caller. Columns of the 13
    non-residue tokens are ``NEG`` (never a label; see the README's Fidelity).
    """
    gl_ids = torch.as_tensor(GL_IDS, device=aa_logits.device)
    ngl_ids = torch.as_tensor(NGL_IDS, device=aa_logits.device)
    log_p_gl_aa = F.log_softmax(aa_logits, dim=-1).index_select(-1, gl_ids)
    if aa_logits_ngl is None:
        log_p_ngl_aa = log_p_gl_aa
    else:
        log_p_ngl_aa = F.log_softmax(aa_logits_ngl, dim=-1).index_select(-1, gl_ids)
    m = origin_logits.unsqueeze(-1)
    out = aa_logits.new_full((*aa_logits.shape[:-1], VOCAB_SIZE), NEG)
    out = out.index_copy(-1, gl_ids, log_p_gl_aa + alpha * F.logsigmoid(-m))
    out = out.index_copy(-1, ngl_ids, log_p_ngl_aa + alpha * F.logsigmoid(m))
    return out / temperature


class PrismModel(nn.Module):
    """PRISM: backbone + origin head + detached conditioning + AA head(s) + α-gate."""

    def __init__(self, config: ModelConfig | None = None):
        super().__init__()
        config = config or ModelConfig.tiny()
        if config.kind != "prism":
            raise ValueError(f"PrismModel needs kind='prism', got {config.kind!r}")
        self.config = config
        d = config.d_model
        self.backbone = _backbone(config, VOCAB_SIZE)
        self.aa_head = AAHead(d)
        self.aa_head_ngl = AAHead(d) if config.dual_heads else None
        self.origin_head = nn.Linear(d, 1)
        self.origin_dropout = nn.Dropout(config.origin_dropout)
        self.origin_projection = nn.Linear(1, d)
        self.alpha_head = nn.Linear(d, 1)
        # official init: small so that conditioning starts subtle and α ≈ 0.5
        for lin in (self.origin_head, self.origin_projection, self.alpha_head):
            nn.init.xavier_uniform_(lin.weight, gain=0.1)
            nn.init.zeros_(lin.bias)
        # T of the gate; the trainer holds it at 1 during the temperature warm-up.
        self.register_buffer("temperature", torch.tensor(float(config.gating_temperature)))

    @property
    def device(self) -> torch.device:
        return self.temperature.device

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        *,
        v_gene_ids: torch.Tensor | None = None,
        j_gene_ids: torch.Tensor | None = None,
        region_ids: torch.Tensor | None = None,
    ) -> PrismOutput:
        h = self.backbone(
            input_ids,
            attention_mask,
            v_gene_ids=v_gene_ids,
            j_gene_ids=j_gene_ids,
            region_ids=region_ids,
        )
        m = self.origin_dropout(self.origin_head(h))  # (B, T, 1)
        # stop-gradient: the origin head learns from its own loss only
        h_cond = h + self.origin_projection(m.detach())
        aa = self.aa_head(h_cond)
        aa_ngl = self.aa_head_ngl(h_cond) if self.aa_head_ngl is not None else None
        if self.config.fixed_alpha is not None:
            alpha = torch.full_like(m, self.config.fixed_alpha)
        else:
            alpha = torch.sigmoid(self.alpha_head(h_cond))
        m = m.squeeze(-1)
        final = gated_logits(aa, m.detach(), alpha, self.temperature, aa_ngl)
        return PrismOutput(
            aa_logits=aa,
            hidden=h,
            origin_logits=m,
            alpha=alpha,
            final_logits=final,
            aa_logits_ngl=aa_ngl,
        )

    def num_parameters(self) -> int:
        return count_parameters(self)


class PrismLessModel(nn.Module):
    """PRISM-less: the same backbone and AA head as a plain 33-token masked LM."""

    def __init__(self, config: ModelConfig | None = None):
        super().__init__()
        config = config or ModelConfig.tiny(kind="prismless")
        if config.kind != "prismless":
            raise ValueError(f"PrismLessModel needs kind='prismless', got {config.kind!r}")
        self.config = config
        self.backbone = _backbone(config, N_ESM2)
        self.aa_head = AAHead(config.d_model)
        self.register_buffer("_anchor", torch.zeros(()), persistent=False)

    @property
    def device(self) -> torch.device:
        return self._anchor.device

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        *,
        v_gene_ids: torch.Tensor | None = None,
        j_gene_ids: torch.Tensor | None = None,
        region_ids: torch.Tensor | None = None,
    ) -> PrismOutput:
        if int(input_ids.max()) >= N_ESM2:
            raise ValueError("PRISM-less reads the 33 ESM-2 tokens only; uppercase the input")
        h = self.backbone(
            input_ids,
            attention_mask,
            v_gene_ids=v_gene_ids,
            j_gene_ids=j_gene_ids,
            region_ids=region_ids,
        )
        return PrismOutput(aa_logits=self.aa_head(h), hidden=h)

    def num_parameters(self) -> int:
        return count_parameters(self)


def build_model(config: ModelConfig) -> PrismModel | PrismLessModel:
    """A freshly initialised model of ``config.kind``."""
    if not isinstance(config, ModelConfig):
        raise TypeError(f"config must be a ModelConfig, got {type(config).__name__}")
    return PrismModel(config) if config.kind == "prism" else PrismLessModel(config)


def default_device() -> torch.device:
    """CUDA when present, else CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def _backbone(config: ModelConfig, vocab: int) -> Backbone:
    return Backbone(
        vocab,
        config.d_model,
        config.n_layers,
        config.n_heads,
        config.d_ff,
        dropout=config.dropout,
        swiglu=config.swiglu,
        token_dropout=config.token_dropout,
        n_v_genes=config.n_v_genes,
        n_j_genes=config.n_j_genes,
        gene_dim=config.gene_dim,
        gene_dropout=config.gene_dropout,
        n_regions=config.n_regions,
        region_dim=config.region_dim,
    )
