"""Embedding the watermark while training the node classifier (method, Steps 3–4).

For the secret subgraphs S_1..S_T and the pattern w (:mod:`~icml26.gnn_watermark.key`),
training minimises

    L = CE(train nodes) + r · L_wmk,
    L_wmk = (1/T) Σ_t mean_{j: w_j ≠ 0} max(0, ε − w_j · β_{t,j}),

where β_t is the closed-form explanation of subgraph t computed from a forward pass on
that subgraph alone (official ``get_watermark_performance_single_subgraph``). The two
losses are combined with PCGrad (``use_pcgrad=True`` on every real dataset) or summed,
and optimised with Adam for a fixed number of epochs on the full graph
(``--preserve_edges_between_subsets``). :data:`DATASET_SETTINGS` holds the official
per-dataset presets (``config.get_presets``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.data import Data

from icml26.gnn_watermark.augment import Augmentation, augment_training_graph
from icml26.gnn_watermark.data import check_graph
from icml26.gnn_watermark.explain import RIDGE_LAMBDA
from icml26.gnn_watermark.key import WatermarkKey
from icml26.gnn_watermark.model import (
    ModelConfig,
    NodeClassifier,
    build_model,
    check_model_fits,
    default_device,
)
from icml26.gnn_watermark.pcgrad import pcgrad_backward
from icml26.gnn_watermark.subgraph import explain_subgraphs, induced_subgraphs
from icml26.shared import torch_generator
from icml26.shared.progress import progress

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation and watermark-loss settings (official ``optimization_kwargs`` et al.).

    ``coef_wmk`` is r, ``epsilon`` the hinge margin ε, ``ridge_lambda`` the λ of the
    explanation; ``pcgrad`` combines the losses with PCGrad instead of summing them.
    """

    lr: float = 5e-3
    epochs: int = 150
    coef_wmk: float = 50.0
    epsilon: float = 0.05
    ridge_lambda: float = RIDGE_LAMBDA
    pcgrad: bool = True
    weight_decay: float = 0.0
    augmentation: Augmentation = field(default_factory=Augmentation)

    def __post_init__(self) -> None:
        if self.lr <= 0 or self.epochs < 1:
            raise ValueError(f"need lr > 0 and epochs >= 1, got {self.lr}, {self.epochs}")
        if self.coef_wmk < 0 or self.epsilon < 0 or self.ridge_lambda <= 0:
            raise ValueError("coef_wmk and epsilon must be >= 0 and ridge_lambda > 0")


_GCN = ModelConfig(arch="GCN", hidden=256, num_layers=3, dropout=0.1)
_SAGE = ModelConfig(arch="SAGE", hidden=256, num_layers=3, dropout=0.1)
#: official per-dataset presets: architecture and training (lr, epochs, r, ε, augmentation)
DATASET_SETTINGS: dict[str, tuple[ModelConfig, TrainConfig]] = {
    "photo": (
        _GCN,
        TrainConfig(
            2e-4,
            300,
            100.0,
            0.01,
            augmentation=Augmentation(
                p=0.3, node_drop=0.3, mixup=1.0, feature_mask=0.3, edge_drop=0.3
            ),
        ),
    ),
    "cs": (
        _SAGE,
        TrainConfig(
            1e-3,
            90,
            20.0,
            0.1,
            augmentation=Augmentation(p=0.3, node_drop=0.1, mixup=5.0, edge_drop=0.1),
        ),
    ),
    "pubmed": (_SAGE, TrainConfig(5e-3, 200, 70.0, 0.1)),
    "computers": (
        _GCN,
        TrainConfig(
            8e-4,
            350,
            60.0,
            0.01,
            augmentation=Augmentation(p=0.3, node_drop=0.8, mixup=80.0, edge_drop=0.8),
        ),
    ),
}


@dataclass
class TrainedModel:
    """A trained classifier, the per-epoch history and (when watermarked) its key."""

    model: NodeClassifier
    history: dict[str, list[float]]
    key: WatermarkKey | None = None


def watermark_loss(beta: Tensor, w: Tensor, epsilon: float) -> Tensor:
    """L_wmk: mean over subgraphs and watermarked positions of max(0, ε − w_j·β_{t,j})."""
    if beta.shape[-1] != w.shape[-1]:
        raise ValueError(f"β has {beta.shape[-1]} features, the watermark {w.shape[-1]}")
    pos = w != 0
    margin = beta[..., pos] * w[pos].to(beta)
    return torch.clamp(epsilon - margin, min=0).mean()


def watermark_alignment(beta: Tensor, w: Tensor) -> float:
    """Share of watermarked entries (over subgraphs × positions) with sign(β_j) = w_j."""
    pos = w != 0
    return float((torch.sign(beta[..., pos]) == w[pos].to(beta)).float().mean())


def fit(
    model: NodeClassifier,
    data: Data,
    cfg: TrainConfig,
    *,
    seed: int = 0,
    extra_losses: Callable[[nn.Module], list[Tensor]] | None = None,
    protected_nodes: Tensor | None = None,
    desc: str = "train",
) -> dict[str, list[float]]:
    """Train ``model`` in place: Adam on CE over the training nodes plus ``extra_losses``.

    ``extra_losses(model)`` returns already-weighted losses, combined with the CE by
    PCGrad when ``cfg.pcgrad`` (else summed). ``protected_nodes`` (the secret subgraph
    nodes) are never augmented.
    """
    check_graph(data)
    check_model_fits(model, data)
    device = next(model.parameters()).device
    data = _on(data, device)
    gen = torch_generator(seed, "fit", device="cpu")
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    train_idx = torch.nonzero(data.train_mask, as_tuple=True)[0]
    if protected_nodes is not None and protected_nodes.numel():
        is_protected = torch.zeros(data.num_nodes, dtype=torch.bool, device=device)
        is_protected[protected_nodes.to(device).reshape(-1)] = True
        aug_idx, fixed_idx = train_idx[~is_protected[train_idx]], train_idx[is_protected[train_idx]]
    else:
        aug_idx, fixed_idx = train_idx, train_idx[:0]
    params = [p for p in model.parameters() if p.requires_grad]
    history: dict[str, list[float]] = {"loss_ce": [], "loss_extra": []}
    model.train()
    for _ in progress(range(cfg.epochs), desc=desc, leave=False):
        opt.zero_grad(set_to_none=True)
        x, ei, kept = augment_training_graph(
            data.x, data.edge_index, aug_idx, cfg.augmentation, gen
        )
        loss_nodes = torch.cat([kept, fixed_idx]) if fixed_idx.numel() else kept
        logp = model(x, ei)
        ce = F.nll_loss(logp[loss_nodes], data.y[loss_nodes])
        extras = extra_losses(model) if extra_losses is not None else []
        if extras and cfg.pcgrad:
            pcgrad_backward([ce, *extras], params, generator=gen)
        else:
            (ce + sum(extras)).backward() if extras else ce.backward()
        opt.step()
        history["loss_ce"].append(float(ce.detach()))
        history["loss_extra"].append(float(sum(e.detach() for e in extras)) if extras else 0.0)
    model.eval()
    return history


def train_clean(
    data: Data,
    model_config: ModelConfig | None = None,
    train_config: TrainConfig | None = None,
    *,
    seed: int = 0,
    device=None,
) -> TrainedModel:
    """The classification-only model (the paper's "clean" reference and null control)."""
    check_graph(data)
    model = build_model(
        data.num_features,
        _num_classes(data),
        model_config,
        seed=seed,
        device=device or default_device(),
    )
    history = fit(model, data, train_config or TrainConfig(), seed=seed, desc="clean")
    return TrainedModel(model, history)


def train_watermarked(
    data: Data,
    key: WatermarkKey,
    model_config: ModelConfig | None = None,
    train_config: TrainConfig | None = None,
    *,
    seed: int = 0,
    device=None,
) -> TrainedModel:
    """Train a classifier with the explanation watermark of ``key`` embedded (Eq. L above)."""
    if not isinstance(key, WatermarkKey):
        raise TypeError(f"key must be a WatermarkKey, got {type(key).__name__}")
    check_graph(data)
    key.check(data)
    cfg = train_config or TrainConfig()
    device = device or default_device()
    model = build_model(
        data.num_features, _num_classes(data), model_config, seed=seed, device=device
    )
    batch = induced_subgraphs(_on(data, device), key.nodes)
    w = key.w.to(device)
    trace: dict[str, list[float]] = {"wmk_alignment": []}

    def extra(m: nn.Module) -> list[Tensor]:
        # dropout 0 on the subgraphs (official dropout_subgraphs = 0)
        beta = explain_subgraphs(m, batch, lam=cfg.ridge_lambda, dropout=0.0)
        trace["wmk_alignment"].append(watermark_alignment(beta.detach(), w))
        return [cfg.coef_wmk * watermark_loss(beta, w, cfg.epsilon)]

    history = fit(
        model, data, cfg, seed=seed, extra_losses=extra, protected_nodes=key.nodes, desc="watermark"
    )
    history.update(trace)
    return TrainedModel(model, history, key)


@torch.no_grad()
def accuracy(model: nn.Module, data: Data, mask: str | Tensor = "test") -> float:
    """Accuracy of the full-graph forward pass (eval mode) on ``data.<mask>_mask`` or a mask."""
    check_graph(data)
    check_model_fits(model, data)
    device = next(model.parameters()).device
    data = _on(data, device)
    m = getattr(data, f"{mask}_mask") if isinstance(mask, str) else mask.to(device)
    was = model.training
    model.eval()
    pred = model(data.x, data.edge_index).argmax(dim=-1)
    model.train(was)
    return float((pred[m] == data.y[m]).float().mean())


def _num_classes(data: Data) -> int:
    return int(data.y.max()) + 1


def _on(data: Data, device) -> Data:
    """``data`` on ``device`` without mutating the caller's object."""
    want, have = torch.device(device), data.x.device
    if want.type == have.type and (want.index is None or want.index == have.index):
        return data
    return data.clone().to(device)
