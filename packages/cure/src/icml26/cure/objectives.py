"""Loss terms: SimGCD's (exact) and CURE's Stage-II terms (reconstructed).

SimGCD (Wen et al., ICCV 2023; CVMI-Lab/SimGCD ``model.py`` and ``train.py``), exact:

- :func:`teacher_temperatures`: 0.07 → 0.04 linearly over 30 epochs, then 0.04;
- :func:`distill_loss`: ``DistillLoss``, the cross-view self-distillation: student
  cosines / 0.1, teacher softmax(cosines / T_t) detached, each view's teacher against
  the other view's student, averaged over the two pairs;
- :func:`memax_loss`: Σ p̄ log p̄ + log K on the batch-mean prediction softmax(cos/0.1);
- :func:`info_nce_logits`: SimCLR logits of two stacked views, temperature 1.0;
- :func:`supcon_loss`: ``SupConLoss`` (temperature 0.07, contrast mode "all").

CURE Stage II (reconstructed; the reviews name the terms, not the formulas):

- :func:`js_consistency`: Jensen–Shannon divergence between the two views' predictions;
- :func:`logit_adjusted_teacher`: teacher logits cos/T_t − τ_la log π̂ (π̂ an EMA of the
  predicted marginals), against old-class bias;
- :func:`entropy_with_virtual_samples`: memax over the batch plus M virtual features
  μ_k + N(0, σ²I) per prototype ("virtual sampling").
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

__all__ = [
    "distill_loss",
    "entropy_with_virtual_samples",
    "info_nce_logits",
    "js_consistency",
    "logit_adjusted_teacher",
    "memax_loss",
    "supcon_loss",
    "teacher_temperatures",
]

STUDENT_TEMP = 0.1


def teacher_temperatures(
    epochs: int, warmup_epochs: int = 30, start: float = 0.07, end: float = 0.04
) -> np.ndarray:
    """SimGCD's teacher temperature per epoch: linspace(start, end, warmup), then end."""
    if epochs < 1 or not 0 <= warmup_epochs <= epochs:
        raise ValueError(f"need 0 <= warmup_epochs <= epochs >= 1, got {warmup_epochs}, {epochs}")
    return np.concatenate(
        [np.linspace(start, end, warmup_epochs), np.full(epochs - warmup_epochs, end)]
    )


def distill_loss(
    student_cos: torch.Tensor,
    teacher_cos: torch.Tensor,
    teacher_temp: float,
    student_temp: float = STUDENT_TEMP,
) -> torch.Tensor:
    """SimGCD's ``DistillLoss`` on two stacked views (rows [view 1; view 2]).

    The teacher is detached here, so it never receives a gradient.
    """
    if student_cos.shape != teacher_cos.shape or student_cos.shape[0] % 2:
        raise ValueError(
            f"two stacked views expected, got {student_cos.shape}, {teacher_cos.shape}"
        )
    student = (student_cos / student_temp).chunk(2)
    teacher = F.softmax(teacher_cos / teacher_temp, dim=-1).detach().chunk(2)
    total = student_cos.new_zeros(())
    terms = 0
    for iq, q in enumerate(teacher):
        for v, s in enumerate(student):
            if v == iq:
                continue
            total = total + torch.sum(-q * F.log_softmax(s, dim=-1), dim=-1).mean()
            terms += 1
    return total / terms


def memax_loss(cos: torch.Tensor, temp: float = STUDENT_TEMP) -> torch.Tensor:
    """SimGCD's mean-entropy maximisation term: Σ p̄ log p̄ + log K (≥ 0, 0 when uniform)."""
    avg = F.softmax(cos / temp, dim=1).mean(dim=0)
    return torch.sum(avg * torch.log(avg)) + math.log(float(len(avg)))


def info_nce_logits(features: torch.Tensor, temperature: float = 1.0):
    """SimGCD's ``info_nce_logits`` for two stacked views: (logits, zero targets)."""
    n = features.shape[0]
    if n % 2 or n < 4:
        raise ValueError(f"two stacked views of >= 2 samples expected, got {n} rows")
    b = n // 2
    idx = torch.cat([torch.arange(b), torch.arange(b)]).to(features.device)
    pos = idx.unsqueeze(0) == idx.unsqueeze(1)
    f = F.normalize(features, dim=1)
    sim = f @ f.T
    eye = torch.eye(n, dtype=torch.bool, device=features.device)
    pos = pos[~eye].view(n, -1)
    sim = sim[~eye].view(n, -1)
    logits = torch.cat([sim[pos].view(n, -1), sim[~pos].view(n, -1)], dim=1) / temperature
    return logits, torch.zeros(n, dtype=torch.long, device=features.device)


def supcon_loss(
    features: torch.Tensor,
    labels: torch.Tensor,
    temperature: float = 0.07,
    base_temperature: float = 0.07,
) -> torch.Tensor:
    """``SupConLoss`` (Khosla et al., 2020) as in SimGCD: features (bsz, n_views, dim)."""
    if features.ndim != 3:
        raise ValueError(f"features must be (bsz, n_views, dim), got {tuple(features.shape)}")
    bsz, n_views = features.shape[:2]
    if labels.shape != (bsz,):
        raise ValueError(f"one label per sample expected: {tuple(labels.shape)} vs {bsz}")
    mask = (labels.view(-1, 1) == labels.view(1, -1)).float()
    contrast = torch.cat(torch.unbind(features, dim=1), dim=0)
    dots = contrast @ contrast.T / temperature
    logits = dots - dots.max(dim=1, keepdim=True).values.detach()
    mask = mask.repeat(n_views, n_views)
    self_mask = 1.0 - torch.eye(bsz * n_views, device=features.device)
    mask = mask * self_mask
    exp = torch.exp(logits) * self_mask
    log_prob = logits - torch.log(exp.sum(1, keepdim=True))
    mean_pos = (mask * log_prob).sum(1) / mask.sum(1)
    return (-(temperature / base_temperature) * mean_pos).view(n_views, bsz).mean()


def js_consistency(cos: torch.Tensor, temp: float = STUDENT_TEMP) -> torch.Tensor:
    """JS(p(v1) ‖ p(v2)) of softmax(cos/temp), averaged over samples (reconstructed)."""
    if cos.shape[0] % 2:
        raise ValueError(f"two stacked views expected, got {cos.shape[0]} rows")
    logp1, logp2 = F.log_softmax(cos / temp, dim=1).chunk(2)
    p1, p2 = logp1.exp(), logp2.exp()
    logm = torch.log((0.5 * (p1 + p2)).clamp_min(1e-12))
    kl1 = torch.sum(p1 * (logp1 - logm), dim=1)
    kl2 = torch.sum(p2 * (logp2 - logm), dim=1)
    return (0.5 * (kl1 + kl2)).mean()


def logit_adjusted_teacher(
    cos: torch.Tensor, prior: torch.Tensor, teacher_temp: float, tau_la: float = 1.0
) -> torch.Tensor:
    """Teacher cosines whose softmax at ``teacher_temp`` is softmax(cos/T_t − τ_la log π̂).

    Reconstructed: logit adjustment (Menon et al., 2021) of the distillation teacher by
    the EMA of predicted marginals π̂, so that over-predicted (old) classes are damped.
    """
    return cos.detach() - teacher_temp * tau_la * torch.log(prior.clamp_min(1e-8))


def entropy_with_virtual_samples(
    cos: torch.Tensor,
    prototypes: torch.Tensor,
    generator: torch.Generator,
    *,
    per_prototype: int = 2,
    sigma: float = 0.1,
    temp: float = STUDENT_TEMP,
) -> torch.Tensor:
    """memax over the batch and M virtual features normalise(μ_k + σε) per prototype.

    Reconstructed "virtual sampling": the virtual features stand for every prototype,
    including those the batch rarely predicts, in the marginal p̄ whose entropy is raised.
    """
    if per_prototype <= 0:
        return memax_loss(cos, temp)
    k, d = prototypes.shape
    eps = torch.randn(k * per_prototype, d, generator=generator).to(prototypes.device)
    virt = F.normalize(prototypes.repeat_interleave(per_prototype, 0) + sigma * eps, dim=-1)
    return memax_loss(torch.cat([cos, virt @ prototypes.T]), temp)
