"""Baselines the reproduction compares PRISM with.

- **PRISM-less** (the rebuttal's matched ablation, official ``train_pure_esm.py``): the
  same backbone and AA head trained as a plain 33-token masked LM
  (:class:`~icml26.prism.model.PrismLessModel`, trained by
  :func:`~icml26.prism.train.train` with the same data, masking, optimiser and steps),
  scored by the masked-marginal log-likelihood ratio
  ``log p(mut) − log p(wt)`` (:func:`prismless_scores`).
- **BLOSUM62** substitution score: ``Σ BLOSUM62[wt, mut]`` over the mutated positions —
  the evolutionary prior with no antibody knowledge (:func:`blosum_scores`).

Pretrained antibody LMs (ESM-2, AbLang2, AntiBERTy, IgLM, Sapiens) download their
weights at run time and are therefore not run here.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from icml26.prism.data import blosum62
from icml26.prism.model import ModelConfig, PrismLessModel, build_model
from icml26.prism.score import score_variants
from icml26.prism.vocab import AA_ORDER, residue_ids

_IDX = {a: i for i, a in enumerate(AA_ORDER)}


def prismless(config: ModelConfig | None = None) -> PrismLessModel:
    """A fresh PRISM-less model with ``config``'s architecture (kind forced to prismless)."""
    cfg = (config or ModelConfig.tiny()).replace(kind="prismless")
    model = build_model(cfg)
    assert isinstance(model, PrismLessModel)
    return model


def prismless_scores(
    model: PrismLessModel, wild_type: str, variants: Sequence[str], *, batch_size: int = 256
) -> np.ndarray:
    """Masked-marginal LLR of each variant under PRISM-less (summed over mutations)."""
    if not isinstance(model, PrismLessModel):
        raise TypeError(f"expected a PrismLessModel, got {type(model).__name__}")
    return score_variants(
        model, wild_type, variants, method="masked_marginal", batch_size=batch_size
    )


def blosum_scores(wild_type: str, variants: Sequence[str]) -> np.ndarray:
    """``Σ BLOSUM62[wt_i, var_i]`` over the positions where a variant differs."""
    wt = wild_type.upper()
    w = residue_ids(wt, chain="wild type")
    b = blosum62()
    out = np.zeros(len(variants))
    wi = np.array([_IDX[a] for a in wt])
    for k, v in enumerate(variants):
        vu = v.upper()
        if len(vu) != len(w):
            raise ValueError(f"variant {k} has length {len(vu)}, the wild type {len(w)}")
        residue_ids(vu, chain=f"variant {k}")
        vi = np.array([_IDX[a] for a in vu])
        diff = vi != wi
        out[k] = b[wi[diff], vi[diff]].sum()
    return out
