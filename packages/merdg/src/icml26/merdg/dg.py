"""Unimodal domain-generalisation baselines of SimMMDG's tables: MixStyle and RSC.

Both act inside the late-fusion model during training only (evaluation is plain fusion).

**MixStyle** (Zhou et al., ICLR 2021; defaults of the official ``mixstyle.py``: p = 0.5,
α = 0.1, ε = 1e-6, ``mix='random'``): with probability p per batch, each sample's
feature statistics are mixed with those of a random other sample of the batch,
``x̂ = σ_mix (x − μ)/σ + μ_mix`` with ``μ_mix = λ μ + (1 − λ) μ_perm`` (likewise σ),
``λ ~ Beta(α, α)`` per sample, statistics detached. The official layer takes per-channel
statistics over the spatial positions of a CNN feature map; our encoders are MLPs with
no spatial axis, so the statistics are the mean and standard deviation of each sample's
hidden vector, and the layer sits after each encoder's first hidden layer (the official
placement is after the early residual stages) — a reconstruction.

**RSC**, representation self-challenging (Huang et al., ECCV 2020; official
``ResNet.forward`` with ``flag=True``): on a detached copy of the classifier input, the
gradient of the true-class logit marks the ``drop_f`` = 1/3 most responsive channels of
each sample; they are muted only for the ``drop_b`` = 1/3 of the batch whose true-class
probability falls most when muted; the classifier then trains on the muted features.
Here the classifier is the fusion head and the features its concatenated input
(channel-wise muting; there is no spatial variant for vectors).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["DG_METHODS", "mixstyle", "rsc_mask"]

DG_METHODS = ("mixstyle", "rsc")


def mixstyle(
    x: torch.Tensor,
    *,
    p: float = 0.5,
    alpha: float = 0.1,
    eps: float = 1e-6,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """MixStyle on a batch of feature vectors (N × C), statistics per sample over C."""
    if x.ndim != 2:
        raise ValueError(f"mixstyle expects (N × C) features, got shape {tuple(x.shape)}")
    n = x.shape[0]
    if n < 2 or torch.rand((), generator=generator).item() > p:
        return x
    mu = x.mean(dim=1, keepdim=True).detach()
    sig = (x.var(dim=1, keepdim=True) + eps).sqrt().detach()
    normed = (x - mu) / sig
    lam = torch.distributions.Beta(alpha, alpha).sample((n, 1)).to(x)
    perm = torch.randperm(n, generator=generator).to(x.device)
    mu_mix = mu * lam + mu[perm] * (1 - lam)
    sig_mix = sig * lam + sig[perm] * (1 - lam)
    return normed * sig_mix + mu_mix


def rsc_mask(
    classifier: nn.Module,
    features: torch.Tensor,
    labels: torch.Tensor,
    *,
    drop_f: float = 1 / 3,
    drop_b: float = 1 / 3,
) -> torch.Tensor:
    """The RSC mask (N × C, entries 0/1) for ``classifier(features)``; no gradient."""
    if features.ndim != 2:
        raise ValueError(f"rsc expects (N × C) features, got shape {tuple(features.shape)}")
    if not (0 < drop_f < 1 and 0 < drop_b <= 1):
        raise ValueError(f"drop fractions must lie in (0, 1), got {drop_f}, {drop_b}")
    was = classifier.training
    classifier.eval()
    x = features.detach().clone().requires_grad_(True)
    with torch.enable_grad():
        out = classifier(x)
        one_hot = F.one_hot(labels, out.shape[1]).to(out.dtype)
        (grad,) = torch.autograd.grad((out * one_hot).sum(), x)
    n, c = x.shape
    k = min(int(c * drop_f), c - 1)
    thresh = grad.sort(dim=1, descending=True).values[:, k : k + 1]
    mask = (grad <= thresh).to(features.dtype)  # mute the most responsive channels
    with torch.no_grad():
        before = (out.softmax(1) * one_hot).sum(1)
        after = (classifier(x * mask).softmax(1) * one_hot).sum(1)
        change = (before - after - 1e-4).clamp_min(0.0)
        j = min(round(n * drop_b), n - 1)
        th = change.sort(descending=True).values[j]
        keep = change <= th  # samples outside the top drop_b keep every channel
        mask[keep] = 1.0
    classifier.train(was)
    return mask
