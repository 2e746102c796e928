"""The comparisons: k-means, GCD, SimGCD (same encoder, loop, budget and seeds as CURE).

- :func:`kmeans_raw`: scikit-learn ``KMeans`` with K clusters on the raw inputs.
- :func:`semi_supervised_kmeans`: GCD's SS-k-means (Vaze et al., 2022): labelled samples
  stay in their class's cluster, old centroids start at the labelled class means, new
  centroids by k-means++ on the unlabelled samples.
- :class:`GCD`: SupCon on labelled + SimCLR InfoNCE on all samples
  ((1 − 0.35) InfoNCE + 0.35 SupCon), then SS-k-means on the features.
- :class:`SimGCD`: SimGCD's exact losses (CVMI-Lab/SimGCD ``train.py``):
  (1 − w)(L_distill + 2 · memax + InfoNCE) + w (CE + SupCon), w = 0.35, with the
  teacher temperature schedule 0.07 → 0.04 over the warm-up epochs.
- k-means on CURE's Stage-I features is :meth:`icml26.cure.CURE.stage1_kmeans`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from icml26.cure.cure import NetConfig, default_device
from icml26.cure.data import GCDData, views
from icml26.cure.objectives import (
    distill_loss,
    info_nce_logits,
    memax_loss,
    supcon_loss,
    teacher_temperatures,
)
from icml26.cure.prototypes import TAU, GCDNet
from icml26.cure.training import TrainConfig, fit_epochs
from icml26.shared import torch_generator

__all__ = ["GCD", "SimGCD", "SimGCDConfig", "kmeans_raw", "semi_supervised_kmeans"]


def kmeans_raw(x: np.ndarray, n_clusters: int, *, seed: int = 0, n_init: int = 10) -> np.ndarray:
    """scikit-learn k-means on the inputs themselves."""
    from sklearn.cluster import KMeans

    return KMeans(n_clusters, n_init=n_init, random_state=seed).fit_predict(np.asarray(x))


def semi_supervised_kmeans(
    features: np.ndarray,
    labelled: np.ndarray,
    labelled_targets: np.ndarray,
    n_clusters: int,
    n_old: int,
    *,
    seed: int = 0,
    max_iter: int = 100,
    tol: float = 1e-4,
) -> np.ndarray:
    """GCD's semi-supervised k-means; returns a cluster per sample (labelled: their class)."""
    z = np.asarray(features, dtype=np.float64)
    lab = np.asarray(labelled, dtype=bool)
    t = np.asarray(labelled_targets, dtype=np.int64)
    if n_clusters < n_old:
        raise ValueError(f"K = {n_clusters} is below the number of old classes ({n_old})")
    rng = np.random.default_rng(seed)
    cent = np.zeros((n_clusters, z.shape[1]))
    for c in range(n_old):
        members = z[lab][t == c]
        cent[c] = members.mean(0) if len(members) else z[rng.integers(len(z))]
    u = z[~lab]
    for c in range(n_old, n_clusters):  # k-means++ seeding on the unlabelled samples
        d2 = np.min(((u[:, None, :] - cent[None, :c]) ** 2).sum(-1), axis=1)
        cent[c] = (
            u[rng.choice(len(u), p=d2 / d2.sum())] if d2.sum() > 0 else u[rng.integers(len(u))]
        )
    assign = np.zeros(len(z), dtype=np.int64)
    assign[lab] = t
    for _ in range(max_iter):
        d = ((u[:, None, :] - cent[None]) ** 2).sum(-1)
        assign[~lab] = d.argmin(1)
        new = np.array(
            [z[assign == c].mean(0) if np.any(assign == c) else cent[c] for c in range(n_clusters)]
        )
        shift = float(np.sum((new - cent) ** 2))
        cent = new
        if shift < tol:
            break
    return assign


@dataclass(frozen=True)
class SimGCDConfig:
    """SimGCD's hyperparameters (train.py defaults); the loop/budget in ``train``."""

    sup_weight: float = 0.35
    memax_weight: float = 2.0
    warmup_teacher_temp: float = 0.07
    teacher_temp: float = 0.04
    infonce: bool = True
    supcon: bool = True
    train: TrainConfig = field(default_factory=TrainConfig)
    net: NetConfig = field(default_factory=NetConfig)


def _split_sup(proj: torch.Tensor, lab: torch.Tensor) -> torch.Tensor:
    return F.normalize(torch.stack([q[lab] for q in proj.chunk(2)], dim=1), dim=-1)


class SimGCD:
    """SimGCD (Wen et al., 2023) with its exact losses on the shared small network."""

    def __init__(
        self,
        config: SimGCDConfig | None = None,
        *,
        seed: int = 0,
        device: torch.device | str | None = None,
    ) -> None:
        self.config = config or SimGCDConfig()
        self.seed = int(seed)
        self.device = torch.device(device) if device is not None else default_device()
        self.model: GCDNet | None = None
        self.stopping: dict = {}

    def loss(self, model: GCDNet, x, y, lab, teacher_temp: float, gen, augment: str):
        """SimGCD's total loss on one batch (train.py, verbatim structure)."""
        c = self.config
        v = torch.cat([views(x, augment, gen), views(x, augment, gen)])
        _, proj, out = model(v)
        teacher = out.detach()
        cluster = distill_loss(out, teacher, teacher_temp) + c.memax_weight * memax_loss(out)
        unsup = cluster
        if c.infonce:
            logits, targets = info_nce_logits(proj)
            unsup = unsup + F.cross_entropy(logits, targets)
        sup = out.new_zeros(())
        if lab.any():
            sup_logits = torch.cat([f[lab] for f in (out / TAU).chunk(2)])
            sup = F.cross_entropy(sup_logits, torch.cat([y[lab], y[lab]]))
            if c.supcon:
                sup = sup + supcon_loss(_split_sup(proj, lab), y[lab])
        return (1 - c.sup_weight) * unsup + c.sup_weight * sup

    def fit(self, data: GCDData, *, n_clusters: int | None = None) -> SimGCD:
        if not isinstance(data, GCDData):
            raise TypeError(f"data must be a GCDData, got {type(data).__name__}")
        c = self.config
        k = data.n_classes if n_clusters is None else int(n_clusters)
        torch.manual_seed(self.seed)
        gen = torch_generator(self.seed)
        model = c.net.build(data.x.shape[1], k).to(self.device)
        self.model = model
        x = torch.as_tensor(data.x, device=self.device)
        y = torch.as_tensor(np.where(data.labelled, data.y, -1), device=self.device)
        lab = torch.as_tensor(data.labelled, device=self.device)
        tr = c.train
        temps = teacher_temperatures(
            tr.cap_epochs,
            min(tr.warmup_teacher_epochs, tr.cap_epochs),
            c.warmup_teacher_temp,
            c.teacher_temp,
        )

        def step(idx: torch.Tensor, epoch: int) -> torch.Tensor:
            idx = idx.to(self.device)
            return self.loss(
                model, x[idx], y[idx], lab[idx], float(temps[epoch]), gen, data.augment
            )

        self.stopping = fit_epochs(model, np.arange(data.n), step, tr, gen, desc="SimGCD").summary()
        return self

    def predict(self, x: np.ndarray) -> np.ndarray:
        if self.model is None:
            raise RuntimeError("call fit() first")
        return self.model.predict(torch.as_tensor(np.asarray(x, np.float32), device=self.device))

    def prototypes(self) -> np.ndarray:
        if self.model is None:
            raise RuntimeError("call fit() first")
        return self.model.prototypes().detach().cpu().numpy()


class GCD:
    """GCD (Vaze et al., 2022): SupCon + SimCLR representation, then SS-k-means."""

    def __init__(
        self,
        train: TrainConfig | None = None,
        net: NetConfig | None = None,
        *,
        seed: int = 0,
        sup_weight: float = 0.35,
        device: torch.device | str | None = None,
    ) -> None:
        self.train, self.net = train or TrainConfig(), net or NetConfig()
        self.seed, self.sup_weight = int(seed), float(sup_weight)
        self.device = torch.device(device) if device is not None else default_device()
        self.model: GCDNet | None = None
        self.stopping: dict = {}
        self.labels_: np.ndarray | None = None

    def fit(self, data: GCDData, *, n_clusters: int | None = None) -> GCD:
        if not isinstance(data, GCDData):
            raise TypeError(f"data must be a GCDData, got {type(data).__name__}")
        k = data.n_classes if n_clusters is None else int(n_clusters)
        torch.manual_seed(self.seed)
        gen = torch_generator(self.seed)
        model = self.net.build(data.x.shape[1], k).to(self.device)
        self.model = model
        x = torch.as_tensor(data.x, device=self.device)
        y = torch.as_tensor(np.where(data.labelled, data.y, -1), device=self.device)
        lab = torch.as_tensor(data.labelled, device=self.device)
        w = self.sup_weight

        def step(idx: torch.Tensor, epoch: int) -> torch.Tensor:
            idx = idx.to(self.device)
            xb, yb, lb = x[idx], y[idx], lab[idx]
            v = torch.cat([views(xb, data.augment, gen), views(xb, data.augment, gen)])
            _, proj, _ = model(v)
            logits, targets = info_nce_logits(proj)
            loss = (1 - w) * F.cross_entropy(logits, targets)
            if lb.sum() > 1:
                loss = loss + w * supcon_loss(_split_sup(proj, lb), yb[lb])
            return loss

        self.stopping = fit_epochs(
            model, np.arange(data.n), step, self.train, gen, desc="GCD"
        ).summary()
        z = model.features(x).cpu().numpy()
        self.labels_ = semi_supervised_kmeans(
            z, data.labelled, data.y[data.labelled], k, data.n_old, seed=self.seed
        )
        return self
