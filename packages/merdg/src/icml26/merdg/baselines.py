"""The comparisons: fusion CE, SimMMDG, SimMMDG + MER, the unimodal ensemble, a cross-check.

The training recipes themselves live in :data:`icml26.merdg.train.METHODS`; this module
names the baselines the paper compares against and the simplest strong one:

- ``fusion`` — standard late fusion trained end-to-end with cross-entropy ("DeepAll");
- ``simmmdg`` — SimMMDG-lite (Dong et al., NeurIPS 2023): shared/specific split, SupCon,
  distance and translation losses at the official weights; ``simmmdg+mer`` adds MER;
- ``unimodal`` — one encoder + classifier per modality trained alone, softmax outputs
  averaged: it never sees two modalities at once, so a cross-modal co-occurrence cannot
  reach it (the simplest strong baseline on the simulator);
- ``fusion+mixstyle``, ``fusion+rsc`` — the unimodal DG methods of SimMMDG's tables
  (MixStyle, RSC; :mod:`icml26.merdg.dg`) inside late fusion, in the ``paper`` preset;
- ``mbcd`` — modality-balanced collaborative distillation (arXiv 2511.20258), a newer
  MMDG peer, reconstructed from its abstract (:mod:`icml26.merdg.mbcd`), in ``paper``.

:func:`lightly_variance_floor` computes the variance floor with ``lightly``'s VICReg
variance term (``lightly.loss.vicreg_loss.variance_loss``) when that library is
installed, to cross-check :func:`icml26.merdg.mer.variance_floor_loss`.
"""

from __future__ import annotations

import torch

from icml26.merdg.train import METHODS, Method

__all__ = ["BASELINES", "MAIN_METHODS", "lightly_variance_floor"]

#: the methods of the smoke comparison, the paper's own first
MAIN_METHODS: tuple[str, ...] = ("fusion+mer", "fusion", "simmmdg+mer", "simmmdg", "unimodal")
#: the baselines (everything but MER-DG's own variants)
BASELINES: dict[str, Method] = {
    k: METHODS[k]
    for k in ("fusion", "simmmdg", "unimodal", "fusion+mixstyle", "fusion+rsc", "mbcd")
}


def lightly_variance_floor(z: torch.Tensor, eps: float = 1e-4) -> torch.Tensor:
    """``lightly``'s VICReg variance term, ``mean_d ReLU(1 − sqrt(Var(z_d) + eps))``.

    Raises ImportError (naming the extra) when ``lightly`` is not installed.
    """
    try:
        from lightly.loss.vicreg_loss import variance_loss
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(
            "the cross-check needs lightly: pip install 'icml26-merdg[peers]'"
        ) from err
    return variance_loss(z, eps=eps)
