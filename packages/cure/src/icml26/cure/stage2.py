"""CURE Stage II: structure-guided semantic expansion (reconstructed).

Initialisation (:func:`initialise_prototypes`): k-means with K clusters on the Stage-I
features of all training data; the clusters are Hungarian-matched to the old classes
using the labelled samples only (never an unlabelled label); a matched cluster keeps its
old class's prototype slot (started at its centroid, or at the Stage-I prototype with
``old_init="prototype"``), the unmatched centroids become the novel prototypes.

Loss (:func:`stage2_loss`), on two views of every sample::

    L_II = w · CE_l + (1 − w) · [λ_js JS(p1‖p2) + λ_sd L_SD + λ_ent (Σ p̄ log p̄ + log K)]
           + λ_see E_SEE(μ_all)

with w = 0.35 (SimGCD's supervised weight), L_SD SimGCD's cross-view self-distillation
whose teacher is logit-adjusted by the EMA of predicted marginals, p̄ the batch-mean
prediction joined by virtual samples around each prototype, and no InfoNCE
(``infonce=True`` adds SimGCD's back, for the ablation).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from scipy.optimize import linear_sum_assignment

from icml26.cure.data import GCDData, views
from icml26.cure.objectives import (
    distill_loss,
    entropy_with_virtual_samples,
    info_nce_logits,
    js_consistency,
    logit_adjusted_teacher,
    memax_loss,
    supcon_loss,
    teacher_temperatures,
)
from icml26.cure.prototypes import TAU, GCDNet
from icml26.cure.see import see_term
from icml26.cure.training import TrainConfig, fit_epochs
from icml26.shared import Plateau

OLD_INITS = ("centroid", "prototype")

__all__ = ["Initialisation", "Stage2Config", "initialise_prototypes", "stage2_loss", "train_stage2"]


@dataclass(frozen=True)
class Stage2Config:
    """Stage-II weights (reconstructed; each term switchable by a zero weight)."""

    sup_weight: float = 0.35
    lambda_js: float = 1.0
    lambda_sd: float = 1.0
    lambda_ent: float = 2.0
    lambda_see: float = 0.1
    tau_e: float = 0.5
    see_cap: float = 0.5
    tau_la: float = 1.0  # 0 switches logit adjustment off
    prior_momentum: float = 0.9
    virtual_per_prototype: int = 2  # 0 switches virtual sampling off
    virtual_sigma: float = 0.1
    infonce: bool = False
    lambda_supcon: float = 0.0
    kmeans_n_init: int = 10
    old_init: str = "centroid"  # "prototype": the Stage-I prototypes themselves

    def __post_init__(self) -> None:
        if self.old_init not in OLD_INITS:
            raise ValueError(f"old_init must be one of {OLD_INITS}, got {self.old_init!r}")
        if not 0 <= self.sup_weight <= 1:
            raise ValueError(f"sup_weight must lie in [0, 1], got {self.sup_weight}")
        if not 0 <= self.prior_momentum < 1:
            raise ValueError(f"prior_momentum must lie in [0, 1), got {self.prior_momentum}")


@dataclass(frozen=True)
class Initialisation:
    """Stage-II start: prototypes (K × dim), k-means clusters and their matching."""

    prototypes: np.ndarray
    clusters: np.ndarray
    centroids: np.ndarray
    matched: dict[int, int]  # cluster -> old class
    novel_clusters: tuple[int, ...]


def initialise_prototypes(
    features: np.ndarray,
    labelled: np.ndarray,
    labelled_targets: np.ndarray,
    old_prototypes: np.ndarray,
    n_clusters: int,
    *,
    seed: int = 0,
    n_init: int = 10,
    old_init: str = "centroid",
) -> Initialisation:
    """k-means on all features; Hungarian match to old classes from labelled samples only.

    ``labelled_targets`` are the labels of the labelled samples (in the order of
    ``np.flatnonzero(labelled)``): the only labels read. Prototypes n_old.. are the unit
    centroids of the unmatched clusters, in cluster order. Prototype j < n_old (old class
    j) is, with ``old_init="centroid"`` (the default), the unit centroid of the cluster
    matched to class j, so that old and novel prototypes start in the same geometry; with
    ``old_init="prototype"`` it stays the Stage-I prototype. The Stage-I prototypes of a
    cross-entropy-trained head sit far from their features (mean cosine 0.3 on digits
    against 0.96 for the centroids), so with "prototype" the novel centroids win the
    argmax for most old-class samples at the start of Stage II.
    """
    if old_init not in OLD_INITS:
        raise ValueError(f"old_init must be one of {OLD_INITS}, got {old_init!r}")
    from sklearn.cluster import KMeans

    z = np.asarray(features, dtype=np.float64)
    labelled = np.asarray(labelled)
    old = np.asarray(old_prototypes, dtype=np.float64)
    n_old = old.shape[0]
    if z.ndim != 2 or not np.all(np.isfinite(z)):
        raise ValueError("features must be a finite (n_samples, dim) array")
    if labelled.dtype != bool or labelled.shape != (z.shape[0],):
        raise ValueError(
            f"labelled must be a boolean mask of length {z.shape[0]}, got {labelled.shape}"
        )
    if not labelled.any():
        raise ValueError("the labelled mask is empty: matching needs labelled samples")
    targets = np.asarray(labelled_targets, dtype=np.int64)
    if targets.shape != (int(labelled.sum()),):
        raise ValueError(f"need {int(labelled.sum())} labelled targets, got {targets.shape}")
    if n_clusters < n_old:
        raise ValueError(f"K = {n_clusters} is below the number of old classes ({n_old})")
    if targets.min() < 0 or targets.max() >= n_old:
        raise ValueError("labelled targets must be old classes 0..n_old-1")
    km = KMeans(n_clusters, n_init=n_init, random_state=seed).fit(z)
    clusters = km.labels_.astype(np.int64)
    counts = np.zeros((n_clusters, n_old), dtype=np.int64)
    np.add.at(counts, (clusters[labelled], targets), 1)
    rows, cols = linear_sum_assignment(counts, maximize=True)
    matched = {int(r): int(c) for r, c in zip(rows, cols, strict=True)}
    novel = tuple(k for k in range(n_clusters) if k not in matched)
    cent = km.cluster_centers_
    first = old.copy()
    if old_init == "centroid":
        for cluster, cls in matched.items():
            first[cls] = cent[cluster]
    protos = np.concatenate([first, cent[list(novel)]]) if novel else first
    protos /= np.linalg.norm(protos, axis=1, keepdims=True).clip(1e-12)
    return Initialisation(
        protos.astype(np.float32), clusters, cent.astype(np.float32), matched, novel
    )


class _Prior:
    """EMA π̂ of the predicted class marginals (starts uniform)."""

    def __init__(self, k: int, momentum: float, device: torch.device | str) -> None:
        self.value = torch.full((k,), 1.0 / k, device=device)
        self.momentum = momentum

    def update(self, probs: torch.Tensor) -> None:
        m = self.momentum
        self.value = m * self.value + (1 - m) * probs.detach().mean(0)


def stage2_loss(
    model: GCDNet,
    x: torch.Tensor,
    y: torch.Tensor,
    lab: torch.Tensor,
    teacher_temp: float,
    prior: _Prior,
    config: Stage2Config,
    generator: torch.Generator,
    augment: str,
) -> torch.Tensor:
    """L_II on one batch; ``y`` is read only where ``lab`` is True."""
    v = torch.cat([views(x, augment, generator), views(x, augment, generator)])
    _, proj, cos = model(v)
    w = config.sup_weight
    sup = cos.new_zeros(())
    if lab.any():
        y_l = y[lab]
        sup_logits = torch.cat([c[lab] for c in (cos / TAU).chunk(2)])
        sup = F.cross_entropy(sup_logits, torch.cat([y_l, y_l]))
        if config.lambda_supcon > 0 and int(lab.sum()) > 1:
            p = F.normalize(torch.stack([q[lab] for q in proj.chunk(2)], dim=1), dim=-1)
            sup = sup + config.lambda_supcon * supcon_loss(p, y_l)
    teacher = cos.detach()
    if config.tau_la > 0:
        teacher = logit_adjusted_teacher(cos, prior.value, teacher_temp, config.tau_la)
    unsup = config.lambda_sd * distill_loss(cos, teacher, teacher_temp)
    if config.lambda_js > 0:
        unsup = unsup + config.lambda_js * js_consistency(cos)
    if config.lambda_ent > 0:
        ent = (
            entropy_with_virtual_samples(
                cos,
                model.prototypes(),
                generator,
                per_prototype=config.virtual_per_prototype,
                sigma=config.virtual_sigma,
            )
            if config.virtual_per_prototype > 0
            else memax_loss(cos)
        )
        unsup = unsup + config.lambda_ent * ent
    if config.infonce:
        logits, targets = info_nce_logits(proj)
        unsup = unsup + F.cross_entropy(logits, targets)
    prior.update(F.softmax(cos / TAU, dim=1))
    see, _ = see_term(model.prototypes(), config.lambda_see, tau_e=config.tau_e, cap=config.see_cap)
    return w * sup + (1 - w) * unsup + see


def train_stage2(
    model: GCDNet,
    data: GCDData,
    config: Stage2Config,
    train: TrainConfig,
    generator: torch.Generator,
    device: torch.device | str = "cpu",
) -> Plateau:
    """Train on all samples from the initialised prototypes (set on ``model`` already)."""
    x = torch.as_tensor(data.x, device=device)
    # unlabelled labels are replaced by -1 here, so that no loss can read them
    y = torch.as_tensor(np.where(data.labelled, data.y, -1), device=device)
    lab_all = torch.as_tensor(data.labelled, device=device)
    temps = teacher_temperatures(
        train.cap_epochs, min(train.warmup_teacher_epochs, train.cap_epochs)
    )
    prior = _Prior(model.n_prototypes, config.prior_momentum, device)

    def step(idx: torch.Tensor, epoch: int) -> torch.Tensor:
        idx = idx.to(device)
        return stage2_loss(
            model,
            x[idx],
            y[idx],
            lab_all[idx],
            float(temps[epoch]),
            prior,
            config,
            generator,
            data.augment,
        )

    return fit_epochs(model, np.arange(data.n), step, train, generator, desc="CURE stage II")
