"""PRISM's losses (official ``_focal_loss``, ``_focal_loss_region_balanced``,
``_binary_focal_loss`` and ``_training_step_multihead``).

- token focal loss ``FL = (1 − p_t)^γ · (−log p_t)`` over masked positions, per-token
  values clamped at 20, NGL positions weighted by ``ngl_weight`` (weighted mean);
- region-balanced variant: ``0.5 · L_CDR · cdr_multiplier + 0.5 · L_FR``, each a
  weighted mean within its region;
- binary focal loss for the origin head ``α_t (1 − p_t)^γ · BCE`` with α = 0.5;
- total (single AA head): ``w_final · L_53 + w_aa · L_33 + w_mut · L_origin``; the
  dual-head variant trains the GL head on GL positions and adds the NGL head's loss
  on NGL positions.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from icml26.prism.germline import CDR_REGION_IDS, FR_REGION_IDS
from icml26.prism.model import PrismOutput
from icml26.prism.vocab import GL_TO_NGL, VOCAB_SIZE

IGNORE = -100
_CLAMP = 20.0


def _per_token_focal(logits: torch.Tensor, targets: torch.Tensor, gamma: float) -> torch.Tensor:
    log_pt = F.log_softmax(logits.float(), dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return torch.clamp(-((1.0 - log_pt.exp()) ** gamma) * log_pt, max=_CLAMP)


def focal_loss(
    logits: torch.Tensor,
    targets: torch.Tensor,
    *,
    gamma: float = 2.0,
    ngl: torch.Tensor | None = None,
    ngl_weight: float = 1.0,
    select: torch.Tensor | None = None,
) -> torch.Tensor:
    """Weighted-mean token focal loss over positions whose target is not ``IGNORE``.

    ``ngl`` (bool, same shape as ``targets``) gives NGL positions the weight
    ``ngl_weight``; ``select`` restricts the positions further (e.g. GL-only).
    """
    valid = targets != IGNORE
    if select is not None:
        valid = valid & select
    if not bool(valid.any()):
        return logits.sum() * 0.0
    loss = _per_token_focal(logits[valid], targets[valid], gamma)
    if ngl is None or ngl_weight == 1.0:
        return loss.mean()
    w = torch.where(ngl[valid], ngl_weight, 1.0).to(loss.dtype)
    return (loss * w).sum() / (w.sum() + 1e-8)


def region_balanced_focal_loss(
    logits: torch.Tensor,
    targets: torch.Tensor,
    regions: torch.Tensor,
    *,
    gamma: float = 2.0,
    ngl: torch.Tensor | None = None,
    ngl_weight: float = 1.0,
    cdr_multiplier: float = 1.0,
) -> torch.Tensor:
    """``0.5 · cdr_multiplier · L_CDR + 0.5 · L_FR`` (one region alone when the other is empty)."""
    valid = targets != IGNORE
    cdr = valid & torch.isin(regions, torch.tensor(CDR_REGION_IDS, device=regions.device))
    fr = valid & torch.isin(regions, torch.tensor(FR_REGION_IDS, device=regions.device))
    has_cdr, has_fr = bool(cdr.any()), bool(fr.any())
    if not (has_cdr or has_fr):
        return logits.sum() * 0.0
    parts = []
    for sel, mult in ((cdr, cdr_multiplier), (fr, 1.0)):
        if bool(sel.any()):
            loss = _per_token_focal(logits[sel], targets[sel], gamma)
            if ngl is not None:
                w = torch.where(ngl[sel], ngl_weight, 1.0).to(loss.dtype)
                parts.append(mult * (loss * w).sum() / (w.sum() + 1e-8))
            else:
                parts.append(mult * loss.mean())
    return 0.5 * (parts[0] + parts[1]) if len(parts) == 2 else parts[0]


def binary_focal_loss(
    logits: torch.Tensor, targets: torch.Tensor, *, gamma: float = 2.0, alpha: float = 0.5
) -> torch.Tensor:
    """Mean of ``α_t (1 − p_t)^γ · BCE(logit, target)`` over positions with target ≥ 0."""
    valid = targets >= 0
    if not bool(valid.any()):
        return logits.sum() * 0.0
    x, y = logits[valid].float(), targets[valid].float()
    p = torch.sigmoid(x)
    p_t = p * y + (1 - p) * (1 - y)
    alpha_t = alpha * y + (1 - alpha) * (1 - y)
    bce = F.binary_cross_entropy_with_logits(x, y, reduction="none")
    return (alpha_t * (1 - p_t) ** gamma * bce).mean()


def labels_53(labels_aa: torch.Tensor, ngl: torch.Tensor) -> torch.Tensor:
    """53-token labels: the uppercase label, moved to its lowercase token at NGL positions."""
    lut = torch.arange(VOCAB_SIZE, device=labels_aa.device)
    for upper, lower in GL_TO_NGL.items():
        lut[upper] = lower
    safe = labels_aa.clamp(min=0)
    return torch.where((labels_aa != IGNORE) & ngl, lut[safe], labels_aa)


@dataclass(frozen=True)
class LossWeights:
    """Loss weights of one training stage (official config keys in brackets)."""

    final: float = 1.5  # [final_loss_weight]
    aa: float = 1.0  # [aa_loss_weight]
    origin: float = 1.0  # [mut_loss_weight]
    ngl_head: float = 1.0  # [ngl_aa_loss_weight] dual-head variant only
    ngl_alpha: float = 1.0  # [ngl_loss_alpha] NGL weight in the 53-way loss
    aa_ngl_weight: float = 1.0  # [aa_loss_ngl_weight] NGL weight in the AA loss
    cdr_multiplier: float = 1.0  # [cdr_loss_multiplier]
    region_balanced: bool = True  # [use_region_balanced_loss]
    gamma: float = 2.0
    origin_alpha: float = 0.5


def prism_loss(
    out: PrismOutput,
    labels_aa: torch.Tensor,
    labels_origin: torch.Tensor,
    ngl: torch.Tensor,
    regions: torch.Tensor | None,
    w: LossWeights,
) -> dict[str, torch.Tensor]:
    """The three (or four) PRISM losses and their weighted total."""
    if out.final_logits is None or out.origin_logits is None:
        raise ValueError("prism_loss needs a PrismModel output")
    if out.aa_logits_ngl is not None:  # dual heads: GL head on GL, NGL head on NGL positions
        loss_aa = focal_loss(out.aa_logits, labels_aa, gamma=w.gamma, select=~ngl)
        loss_ngl = focal_loss(out.aa_logits_ngl, labels_aa, gamma=w.gamma, select=ngl)
    else:
        loss_aa = focal_loss(
            out.aa_logits, labels_aa, gamma=w.gamma, ngl=ngl, ngl_weight=w.aa_ngl_weight
        )
        loss_ngl = None
    loss_origin = binary_focal_loss(
        out.origin_logits, labels_origin, gamma=w.gamma, alpha=w.origin_alpha
    )
    y53 = labels_53(labels_aa, ngl)
    if w.region_balanced and regions is not None:
        loss_final = region_balanced_focal_loss(
            out.final_logits,
            y53,
            regions,
            gamma=w.gamma,
            ngl=ngl,
            ngl_weight=w.ngl_alpha,
            cdr_multiplier=w.cdr_multiplier,
        )
    else:
        loss_final = focal_loss(
            out.final_logits, y53, gamma=w.gamma, ngl=ngl, ngl_weight=w.ngl_alpha
        )
    total = w.final * loss_final + w.aa * loss_aa + w.origin * loss_origin
    parts = {"final": loss_final, "aa": loss_aa, "origin": loss_origin}
    if loss_ngl is not None:
        total = total + w.ngl_head * loss_ngl
        parts["aa_ngl"] = loss_ngl
    return {"total": total, **parts}


def mlm_loss(out: PrismOutput, labels_aa: torch.Tensor, *, focal_gamma: float | None = None):
    """PRISM-less: cross-entropy over the 33 tokens at masked positions (official
    ``train_pure_esm.py``); ``focal_gamma`` switches to a focal loss."""
    valid = labels_aa != IGNORE
    if focal_gamma is not None:
        loss = focal_loss(out.aa_logits, labels_aa, gamma=focal_gamma)
    elif bool(valid.any()):
        loss = F.cross_entropy(out.aa_logits[valid].float(), labels_aa[valid])
    else:
        loss = out.aa_logits.sum() * 0.0
    return {"total": loss, "aa": loss}
