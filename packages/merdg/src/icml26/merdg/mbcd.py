"""MBCD, modality-balanced collaborative distillation (Wang et al., arXiv 2511.20258).

A newer multimodal domain-generalisation peer of MER-DG, **reconstructed from its
abstract**: the paper's equations and its code (``xiaohanwang01/MBCD``) were not
available to us, so every formula and weight below is ours. The abstract names three
parts, all kept:

1. **Adaptive modality dropout** in the student: a modality that is ahead (its
   uni-modal branch is more confident on the batch) is dropped from the fusion input more
   often, so the fusion head cannot lean early on the fastest-converging modality. Here
   ``s_m`` is the batch-mean true-class probability of uni-modal branch ``m`` (detached),
   ``p_m = p_max · s_m / max_k s_k`` and each sample drops modality ``m`` from the fused
   input with probability ``p_m`` (a sample never drops all modalities: it then keeps
   them all).
2. **Gradient consistency** between the uni-modal branches and the fused
   representation: with ``g_m^uni = ∂CE(h_m(e_m), y)/∂e_m`` and
   ``g_m^fus = ∂CE(fusion(e), y)/∂e_m`` (taken with ``create_graph``),
   ``L_gc = mean_m (1 − cos(g_m^uni, g_m^fus))`` on the flattened batch gradients.
3. **Weight-averaging teacher** and cross-modal distillation: the teacher is an
   exponential moving average of the student (``θ_T ← β θ_T + (1 − β) θ_S`` after every
   step); its fused prediction on the full input is distilled into every uni-modal
   branch, ``L_kd = mean_m τ² KL(softmax(t/τ) ‖ softmax(u_m/τ))``.

Objective ``L = CE(fusion(dropped e), y) + mean_m CE(u_m, y) + λ_gc L_gc + λ_kd L_kd``;
the teacher (the averaged weights) is the model that is evaluated and returned.

References:
    X. Wang, Z. Cheng, T. Zhong, L. Chen, F. Zhou, "Modality-Balanced Collaborative
    Distillation for Multi-Modal Domain Generalization", arXiv:2511.20258, 2025.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

__all__ = [
    "MBCDConfig",
    "distillation_loss",
    "ema_update",
    "gradient_consistency_loss",
    "modality_dropout_mask",
    "modality_dropout_probs",
]


@dataclass(frozen=True)
class MBCDConfig:
    """Weights of the reconstructed MBCD objective (ours; the paper's are unknown)."""

    p_max: float = 0.5  # drop probability of the most confident modality
    lambda_gc: float = 1.0
    lambda_kd: float = 1.0
    temperature: float = 2.0
    ema_decay: float = 0.99  # β of the weight-averaging teacher

    def __post_init__(self) -> None:
        if not 0.0 <= self.p_max < 1.0:
            raise ValueError(f"p_max must lie in [0, 1), got {self.p_max}")
        if self.lambda_gc < 0 or self.lambda_kd < 0:
            raise ValueError("lambda_gc and lambda_kd must be >= 0")
        if self.temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {self.temperature}")
        if not 0.0 <= self.ema_decay < 1.0:
            raise ValueError(f"ema_decay must lie in [0, 1), got {self.ema_decay}")


def modality_dropout_probs(
    uni_logits: Sequence[torch.Tensor], y: torch.Tensor, p_max: float
) -> torch.Tensor:
    """``p_m = p_max · s_m / max_k s_k`` with ``s_m`` the batch-mean true-class probability
    of uni-modal branch ``m`` (detached); shape (M,)."""
    with torch.no_grad():
        s = torch.stack(
            [u.softmax(-1).gather(-1, y.unsqueeze(-1)).squeeze(-1).mean() for u in uni_logits]
        )
        return p_max * s / s.max().clamp_min(1e-12)


def modality_dropout_mask(
    probs: torch.Tensor, n: int, *, generator: torch.Generator | None = None
) -> torch.Tensor:
    """Per-sample keep masks (N × M, float): modality ``m`` is dropped with probability
    ``probs[m]``; a sample that would drop every modality keeps them all."""
    u = torch.rand((n, len(probs)), generator=generator).to(probs.device)
    keep = u >= probs[None, :]
    none = ~keep.any(dim=1, keepdim=True)
    return (keep | none).to(probs.dtype)


def gradient_consistency_loss(
    embeddings: Sequence[torch.Tensor],
    uni_losses: Sequence[torch.Tensor],
    fused_loss: torch.Tensor,
) -> torch.Tensor:
    """``mean_m (1 − cos(∂L_uni,m/∂e_m, ∂L_fused/∂e_m))``, differentiable (double backward)."""
    g_fus = torch.autograd.grad(fused_loss, list(embeddings), create_graph=True)
    terms = []
    for e, lu, gf in zip(embeddings, uni_losses, g_fus, strict=True):
        (gu,) = torch.autograd.grad(lu, e, create_graph=True)
        terms.append(1.0 - F.cosine_similarity(gu.flatten(), gf.flatten(), dim=0, eps=1e-12))
    return torch.stack(terms).mean()


def distillation_loss(
    teacher_logits: torch.Tensor, uni_logits: Sequence[torch.Tensor], temperature: float
) -> torch.Tensor:
    """``mean_m τ² KL(softmax(t/τ) ‖ softmax(u_m/τ))`` (teacher detached), batch-mean."""
    t = (teacher_logits.detach() / temperature).log_softmax(-1)
    terms = [
        F.kl_div((u / temperature).log_softmax(-1), t, log_target=True, reduction="batchmean")
        for u in uni_logits
    ]
    return temperature**2 * torch.stack(terms).mean()


@torch.no_grad()
def ema_update(teacher: nn.Module, student: nn.Module, decay: float) -> None:
    """``θ_T ← decay · θ_T + (1 − decay) · θ_S`` for parameters; buffers are copied."""
    t_params = list(teacher.parameters())
    s_params = [p.detach() for p in student.parameters()]
    torch._foreach_lerp_(t_params, s_params, 1.0 - decay)
    for tb, sb in zip(teacher.buffers(), student.buffers(), strict=True):
        tb.copy_(sb)
