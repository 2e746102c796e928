"""Per-modality encoders, projection heads, late fusion, and SimMMDG-lite.

Shapes follow the official code (olivesgatech/MER-DG, ``train_mer_dg.py`` and
``train_video_flow_audio_EPIC_MERDG.py``) with the pretrained video/flow/audio backbones
replaced by small MLP encoders on feature vectors:

- late fusion ``Linear(Σd, h) – ReLU – Dropout(0.5) – Linear(h, C)`` on the concatenated
  encoder embeddings ``e_m`` (the official ``Encoder`` class used as classifier);
- ``ProjectHead``: ``Linear – Norm – ReLU – Linear – Norm – ReLU – Linear``; LayerNorm and
  *un-normalised* outputs in the fusion + MER variant, BatchNorm and *L2-normalised*
  outputs in the SimMMDG variant;
- SimMMDG: each ``e_m`` is split into a shared (first) and a specific (second) half, each
  with its own projection head; SupCon on the shared projections (temperature 0.1,
  weight 3.0), the distance loss ``−MSE(shared, specific)`` (weight 0.7) and cross-modal
  translation MLPs ``e_a → e_b`` scored by the distance of L2-normalised vectors
  (weight 0.1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

__all__ = [
    "ARCHITECTURES",
    "ModelConfig",
    "MultimodalNet",
    "ProjectHead",
    "distance_loss",
    "supcon_loss",
    "translation_loss",
]

ARCHITECTURES = ("fusion", "simmmdg", "unimodal", "mbcd")


@dataclass(frozen=True)
class ModelConfig:
    """Sizes of the small networks (defaults: the brief's smoke MLPs)."""

    encoder_hidden: int = 64
    embed_dim: int = 32  # e_m; SimMMDG splits it into two halves
    proj_hidden: int = 64
    proj_dim: int = 32  # z_m (D of the MER loss)
    fusion_hidden: int = 64
    dropout: float = 0.5
    trans_hidden: int = 64
    encoder_layers: int = 1  # hidden layers of each encoder

    def __post_init__(self) -> None:
        for name in ("encoder_hidden", "embed_dim", "proj_hidden", "proj_dim", "fusion_hidden"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must lie in [0, 1), got {self.dropout}")


def _encoder(d_in: int, cfg: ModelConfig) -> nn.Sequential:
    layers: list[nn.Module] = []
    width = d_in
    for _ in range(cfg.encoder_layers):
        layers += [nn.Linear(width, cfg.encoder_hidden), nn.ReLU()]
        width = cfg.encoder_hidden
    layers.append(nn.Linear(width, cfg.embed_dim))
    return nn.Sequential(*layers)


def _classifier(d_in: int, n_classes: int, cfg: ModelConfig) -> nn.Sequential:
    return nn.Sequential(
        nn.Linear(d_in, cfg.fusion_hidden),
        nn.ReLU(),
        nn.Dropout(cfg.dropout),
        nn.Linear(cfg.fusion_hidden, n_classes),
    )


class ProjectHead(nn.Module):
    """``Linear – Norm – ReLU – Linear – Norm – ReLU – Linear`` (the official head)."""

    def __init__(self, d_in: int, hidden: int, d_out: int, *, norm: str, normalize: bool):
        super().__init__()
        if norm not in ("layer", "batch"):
            raise ValueError(f"norm must be 'layer' or 'batch', got {norm!r}")
        make = nn.LayerNorm if norm == "layer" else nn.BatchNorm1d
        self.head = nn.Sequential(
            nn.Linear(d_in, hidden),
            make(hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            make(hidden),
            nn.ReLU(),
            nn.Linear(hidden, d_out),
        )
        self.normalize = normalize

    def forward(self, e: torch.Tensor) -> torch.Tensor:
        z = self.head(e)
        return F.normalize(z, dim=-1) if self.normalize else z


class MultimodalNet(nn.Module):
    """Encoders per modality and one of three heads.

    ``arch="fusion"``: late fusion on ``concat_m e_m`` plus a LayerNorm projection head per
    modality (un-normalised ``z_m``, the MER input of fusion + MER). ``arch="simmmdg"``:
    the same fusion classifier, shared/specific BatchNorm heads with L2-normalised outputs
    and translation MLPs. ``arch="unimodal"``: one classifier per modality, no fusion
    (the unimodal ensemble averages their softmax outputs). ``arch="mbcd"``: late fusion
    plus one uni-modal classifier per modality (:mod:`icml26.merdg.mbcd`).
    """

    def __init__(
        self,
        dims: Sequence[int],
        n_classes: int,
        arch: str = "fusion",
        config: ModelConfig | None = None,
    ):
        super().__init__()
        cfg = config or ModelConfig()
        if arch not in ARCHITECTURES:
            raise ValueError(f"arch must be one of {ARCHITECTURES}, got {arch!r}")
        dims = [int(d) for d in dims]
        if not dims or any(d < 1 for d in dims):
            raise ValueError(f"dims must list positive input widths, got {dims}")
        if n_classes < 2:
            raise ValueError(f"n_classes must be >= 2, got {n_classes}")
        if arch == "simmmdg" and cfg.embed_dim % 2:
            raise ValueError("SimMMDG splits each embedding in halves: embed_dim must be even")
        if arch == "simmmdg" and len(dims) < 2:
            raise ValueError("SimMMDG needs at least two modalities")
        self.arch, self.config, self.dims, self.n_classes = arch, cfg, tuple(dims), n_classes
        M, E = len(dims), cfg.embed_dim
        self.encoders = nn.ModuleList(_encoder(d, cfg) for d in dims)
        if arch == "unimodal":
            self.heads = nn.ModuleList(_classifier(E, n_classes, cfg) for _ in dims)
            return
        self.fusion = _classifier(M * E, n_classes, cfg)
        if arch == "mbcd":
            self.heads = nn.ModuleList(_classifier(E, n_classes, cfg) for _ in dims)
            return
        if arch == "fusion":
            self.proj = nn.ModuleList(
                ProjectHead(E, cfg.proj_hidden, cfg.proj_dim, norm="layer", normalize=False)
                for _ in dims
            )
        else:
            half = E // 2
            self.proj_shared = nn.ModuleList(
                ProjectHead(half, cfg.proj_hidden, cfg.proj_dim, norm="batch", normalize=True)
                for _ in dims
            )
            self.proj_specific = nn.ModuleList(
                ProjectHead(half, cfg.proj_hidden, cfg.proj_dim, norm="batch", normalize=True)
                for _ in dims
            )
            pairs = [(a, b) for a in range(M) for b in range(M) if a != b]
            self.pairs = pairs
            self.translators = nn.ModuleList(
                nn.Sequential(
                    nn.Linear(E, cfg.trans_hidden),
                    nn.ReLU(),
                    nn.Linear(cfg.trans_hidden, cfg.trans_hidden),
                    nn.ReLU(),
                    nn.Dropout(cfg.dropout),
                    nn.Linear(cfg.trans_hidden, E),
                )
                for _ in pairs
            )

    def _check(self, xs: Sequence[torch.Tensor]) -> None:
        if isinstance(xs, torch.Tensor) or len(xs) != len(self.dims):
            got = "one tensor" if isinstance(xs, torch.Tensor) else f"{len(xs)} tensors"
            raise ValueError(f"the model has {len(self.dims)} modalities; got {got}")
        n = {int(x.shape[0]) for x in xs}
        if len(n) > 1:
            raise ValueError(f"every modality needs the same batch length, got {sorted(n)}")
        for m, (x, d) in enumerate(zip(xs, self.dims, strict=True)):
            if x.ndim != 2 or x.shape[1] != d:
                raise ValueError(f"modality {m} must be (N × {d}), got {tuple(x.shape)}")

    def embed(self, xs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        """The encoder embeddings ``e_m``."""
        self._check(xs)
        return [enc(x) for enc, x in zip(self.encoders, xs, strict=True)]

    def logits_from(self, embeddings: Sequence[torch.Tensor]) -> torch.Tensor:
        if self.arch == "unimodal":
            probs = torch.stack(
                [h(e).softmax(-1) for h, e in zip(self.heads, embeddings, strict=True)]
            ).mean(0)
            return probs.clamp_min(1e-12).log()
        return self.fusion(torch.cat(list(embeddings), dim=1))

    def forward(self, xs: Sequence[torch.Tensor]) -> torch.Tensor:
        """Class logits (log of the averaged softmax for the unimodal ensemble)."""
        return self.logits_from(self.embed(xs))


def supcon_loss(
    features: torch.Tensor,
    labels: torch.Tensor,
    temperature: float = 0.1,
    base_temperature: float = 0.07,
) -> torch.Tensor:
    """Supervised contrastive loss (Khosla et al. 2020), ``contrast_mode='all'``, scaled by
    ``temperature / base_temperature`` (SimMMDG sets the temperature to 0.1 and keeps the
    base 0.07). ``features`` is (N × views × D), L2-normalised; the views are modalities.
    Stacked (K × N × views × D) features with (K × N) labels give one value per model."""
    if features.ndim < 3:
        raise ValueError(f"features must be (N × views × D), got {tuple(features.shape)}")
    n, v, _ = features.shape[-3:]
    contrast = torch.cat(torch.unbind(features, dim=-2), dim=-2)  # (... × vN × D)
    logits = contrast @ contrast.mT / temperature
    logits = logits - logits.max(dim=-1, keepdim=True).values.detach()
    lab = labels.repeat(*([1] * (labels.ndim - 1)), v)
    positives = (lab[..., :, None] == lab[..., None, :]).float()
    self_mask = torch.eye(v * n, device=features.device, dtype=positives.dtype)
    positives = positives * (1 - self_mask)
    exp = torch.exp(logits) * (1 - self_mask)
    log_prob = logits - torch.log(exp.sum(-1, keepdim=True))
    mean_pos = (positives * log_prob).sum(-1) / positives.sum(-1).clamp_min(1.0)
    return -(temperature / base_temperature) * mean_pos.mean(-1)


def distance_loss(embeddings: Sequence[torch.Tensor], *, normalized: bool = True) -> torch.Tensor:
    """``−mean_m MSE(shared_m, specific_m)``: pushes the halves of each embedding apart.

    ``normalized=False`` is the official, unbounded form: at the smoke learning rate it
    diverged (embedding norms ×25 in five epochs, source accuracy at chance), so by
    default the halves are L2-normalised first, which bounds the term (a deviation).
    """
    out = embeddings[0].new_zeros(embeddings[0].shape[:-2])
    for e in embeddings:
        half = e.shape[-1] // 2
        a, b = e[..., :half], e[..., half:]
        if normalized:
            a, b = F.normalize(a, dim=-1), F.normalize(b, dim=-1)
        out = out - (a - b).square().mean(dim=(-2, -1))
    return out / len(embeddings)


def translation_loss(model: MultimodalNet, embeddings: Sequence[torch.Tensor]) -> torch.Tensor:
    """Mean over ordered pairs of ``‖ T_ab(e_a)/‖·‖ − e_b/‖e_b‖ ‖``, batch-averaged."""
    sources = [embeddings[a] for a, _ in model.pairs]
    if hasattr(model.translators, "apply_each"):  # stacked runs: every pair at once
        outs = model.translators.apply_each(sources)
    else:
        outs = [net(x) for net, x in zip(model.translators, sources, strict=True)]
    terms = []
    for (_, b), out in zip(model.pairs, outs, strict=True):
        pred = F.normalize(out, dim=-1)
        goal = F.normalize(embeddings[b], dim=-1)
        terms.append(torch.linalg.vector_norm(pred - goal, dim=-1).mean(-1))
    return torch.stack(terms).mean(0)
