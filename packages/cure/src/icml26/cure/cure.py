"""CURE: Consistency-under-Unified Semantic Regularization (ICML 2026) — reconstructed.

Stage I (:mod:`icml26.cure.stage1`) learns category-anchored features and old-class
prototypes on labelled data; Stage II (:mod:`icml26.cure.stage2`) clusters all data
with Stage-I features, keeps the matched old prototypes, starts novel prototypes at the
unmatched centroids, and trains with view consistency and unified semantic
regularisation, without InfoNCE uniformity. Every formula is a reconstruction from the
abstract and the public reviews (no loss code is public).

Backbone: the README says "the backbone obtained from SimGCD". ``fit(init=None)``
starts from the same fresh encoder SimGCD starts from (the "SimGCD setup" reading,
used in the reproduction); ``fit(init=state_dict)`` starts from a SimGCD-trained
network (the "SimGCD checkpoint" reading; its budget then adds SimGCD's).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from icml26.cure.data import GCDData
from icml26.cure.prototypes import GCDNet
from icml26.cure.stage1 import Stage1Config, train_stage1
from icml26.cure.stage2 import Initialisation, Stage2Config, initialise_prototypes, train_stage2
from icml26.cure.training import TrainConfig
from icml26.shared import torch_generator

__all__ = ["CURE", "CUREConfig", "NetConfig", "default_device"]


def default_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


@dataclass(frozen=True)
class NetConfig:
    """Encoder MLP in → hidden → hidden → dim, projector dim → proj_hidden → proj_dim."""

    hidden: int = 128
    dim: int = 64
    proj_hidden: int = 128
    proj_dim: int = 32

    def build(self, in_dim: int, k: int) -> GCDNet:
        return GCDNet(
            in_dim,
            k,
            hidden=self.hidden,
            dim=self.dim,
            proj_hidden=self.proj_hidden,
            proj_dim=self.proj_dim,
        )


@dataclass(frozen=True)
class CUREConfig:
    stage1: Stage1Config = field(default_factory=Stage1Config)
    stage2: Stage2Config = field(default_factory=Stage2Config)
    train1: TrainConfig = field(default_factory=TrainConfig)
    train2: TrainConfig = field(default_factory=TrainConfig)
    net: NetConfig = field(default_factory=NetConfig)


class CURE:
    """Two-stage prototype learner for GCD. ``fit(data)`` then ``predict(x)``."""

    def __init__(
        self,
        config: CUREConfig | None = None,
        *,
        seed: int = 0,
        device: torch.device | str | None = None,
    ) -> None:
        self.config = config or CUREConfig()
        if not isinstance(self.config, CUREConfig):
            raise TypeError(f"config must be a CUREConfig, got {type(config).__name__}")
        self.seed = int(seed)
        self.device = torch.device(device) if device is not None else default_device()
        self.model: GCDNet | None = None
        self.stopping: dict[str, dict] = {}
        self.initialisation: Initialisation | None = None
        self.stage1_features: np.ndarray | None = None

    def fit(
        self, data: GCDData, *, n_clusters: int | None = None, init: dict | None = None
    ) -> CURE:
        if not isinstance(data, GCDData):
            raise TypeError(f"data must be a GCDData, got {type(data).__name__}")
        k = data.n_classes if n_clusters is None else int(n_clusters)
        if k < data.n_old:
            raise ValueError(f"K = {k} is below the number of old classes ({data.n_old})")
        cfg = self.config
        torch.manual_seed(self.seed)
        gen = torch_generator(self.seed)
        model = cfg.net.build(data.x.shape[1], k).to(self.device)
        if init is not None:
            model.load_state_dict(init)
        self.model = model
        rule1 = train_stage1(model, data, cfg.stage1, cfg.train1, gen, self.device)
        self.stopping["stage1"] = rule1.summary()
        z = model.features(torch.as_tensor(data.x, device=self.device)).cpu().numpy()
        self.stage1_features = z
        lab = data.labelled
        old = model.prototypes()[: data.n_old].detach().cpu().numpy()
        self.initialisation = initialise_prototypes(
            z,
            lab,
            data.y[lab],
            old,
            k,
            seed=self.seed,
            n_init=cfg.stage2.kmeans_n_init,
            old_init=cfg.stage2.old_init,
        )
        with torch.no_grad():
            model.prototype_weight.copy_(torch.as_tensor(self.initialisation.prototypes))
        rule2 = train_stage2(model, data, cfg.stage2, cfg.train2, gen, self.device)
        self.stopping["stage2"] = rule2.summary()
        return self

    def _fitted(self) -> GCDNet:
        if self.model is None:
            raise RuntimeError("call fit() first")
        return self.model

    def predict(self, x: np.ndarray) -> np.ndarray:
        """argmax over prototypes of each row of ``x``."""
        model = self._fitted()
        x = np.asarray(x, dtype=np.float32)
        if x.ndim != 2 or not np.all(np.isfinite(x)):
            raise ValueError("x must be a finite (n_samples, n_features) array")
        return model.predict(torch.as_tensor(x, device=self.device))

    def stage1_kmeans(self) -> np.ndarray:
        """The clusters of the Stage-II initialisation: k-means on Stage-I features."""
        if self.initialisation is None:
            raise RuntimeError("call fit() first")
        return self.initialisation.clusters

    def prototypes(self) -> np.ndarray:
        return self._fitted().prototypes().detach().cpu().numpy()
