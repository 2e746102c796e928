"""Masking with region-specific rates (official ``make_collate_fn_multihead``).

Each residue is selected with probability ``cdr`` in CDRs, ``fr`` in frameworks and
``base`` elsewhere (special tokens never). Selected positions get labels (the
uppercase residue for the AA head, 0/1 for the origin head); unselected ones are
ignored. Inputs of selected positions follow BERT's 80/10/10 rule: ``<mask>``,
a random amino acid, or unchanged. The input is uppercase in every case.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from icml26.prism.germline import CDR_REGION_IDS, FR_REGION_IDS
from icml26.prism.losses import IGNORE
from icml26.prism.vocab import GL_IDS, MASK, PAD


@dataclass(frozen=True)
class MaskingConfig:
    """Masking probabilities: ``base`` (``mask_prob``), ``cdr`` and ``fr``."""

    base: float = 0.15
    cdr: float = 0.35
    fr: float = 0.35

    def __post_init__(self) -> None:
        for name in ("base", "cdr", "fr"):
            p = getattr(self, name)
            if not 0.0 <= p <= 1.0:
                raise ValueError(f"mask probability {name} must lie in [0, 1], got {p}")


@dataclass
class MaskedBatch:
    input_ids: torch.Tensor  # (B, T) uppercase, with <mask>/random/kept at selected positions
    attention_mask: torch.Tensor
    labels_aa: torch.Tensor  # uppercase residue id or IGNORE
    labels_origin: torch.Tensor  # 0./1. or -1.
    ngl: torch.Tensor  # bool, true NGL positions (all positions)
    regions: torch.Tensor  # region ids (7 = special)
    selected: torch.Tensor  # bool

    def to(self, device, **kwargs) -> MaskedBatch:
        fields = self.__dataclass_fields__
        return MaskedBatch(*(getattr(self, f).to(device, **kwargs) for f in fields))


def mask_tokens(
    input_ids: torch.Tensor,
    residue: torch.Tensor,
    regions: torch.Tensor,
    ngl: torch.Tensor,
    config: MaskingConfig,
    generator: torch.Generator,
) -> MaskedBatch:
    """Select and corrupt positions of an uppercase batch; see the module docstring."""
    prob = torch.where(residue, config.base, 0.0)
    prob = torch.where(
        residue & torch.isin(regions, torch.tensor(CDR_REGION_IDS)), config.cdr, prob
    )
    prob = torch.where(residue & torch.isin(regions, torch.tensor(FR_REGION_IDS)), config.fr, prob)
    selected = torch.rand(input_ids.shape, generator=generator) < prob
    labels_aa = torch.where(selected, input_ids, IGNORE)
    labels_origin = torch.where(selected, ngl.float(), -1.0)
    roll = torch.rand(input_ids.shape, generator=generator)
    gl = torch.as_tensor(GL_IDS)
    random_aa = gl[torch.randint(0, len(gl), input_ids.shape, generator=generator)]
    corrupted = torch.where(selected & (roll < 0.8), MASK, input_ids)
    corrupted = torch.where(selected & (roll >= 0.8) & (roll < 0.9), random_aa, corrupted)
    return MaskedBatch(
        corrupted, (input_ids != PAD).long(), labels_aa, labels_origin, ngl, regions, selected
    )
