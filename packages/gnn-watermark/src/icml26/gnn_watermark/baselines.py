"""The comparisons of the paper: the backdoor-trigger watermark and the clean model.

**Backdoor watermark with a random trigger graph** (Zhao et al. 2021, "Watermarking
graph neural networks by random graphs"; Xu et al. 2023; official
``create_random_trigger_graph`` and ``closure_random_backdoor_watermark``): an
Erdős–Rényi graph of 5 % of the graph's node count (edge probability 0.05) whose
nodes each have 50 % of their binary features set to one, is labelled — with one
target label (Xu et al.) or a random label per node (Zhao et al.; the official code) —
and trained jointly: L = CE(train nodes) + α·CE(trigger nodes), α = 0.2, the trigger
graph run as its own graph. Ownership is verified by the suspect's accuracy on the
trigger labels, with a one-sided binomial test against chance 1/C.

The paper's criticism is **ownership ambiguity**: the trigger is data manipulation —
the owner's model is taught to misclassify inputs on purpose — and an innocent model
may produce the trigger labels by itself (a dense out-of-distribution node is often
sent to one class; if that class is the target, a clean model "verifies").
:func:`trigger_verification` measures both for any model.

The **clean model** is :func:`~icml26.gnn_watermark.watermark.train_clean`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch
import torch.nn.functional as F
from scipy import stats
from torch import Tensor, nn
from torch_geometric.data import Data

from icml26.gnn_watermark.model import ModelConfig, build_model, default_device
from icml26.gnn_watermark.watermark import TrainConfig, TrainedModel, _num_classes, _on, fit
from icml26.shared import numpy_rng


@dataclass(frozen=True)
class TriggerGraph:
    """The backdoor owner's secret: an ER trigger graph with its labels."""

    x: Tensor
    edge_index: Tensor
    y: Tensor

    @property
    def num_nodes(self) -> int:
        return int(self.x.shape[0])

    def to(self, device) -> TriggerGraph:
        return TriggerGraph(self.x.to(device), self.edge_index.to(device), self.y.to(device))


def random_trigger_graph(
    num_nodes: int,
    num_features: int,
    num_classes: int,
    *,
    edge_prob: float = 0.05,
    ones_fraction: float = 0.5,
    target_label: int | None = None,
    seed: int = 0,
) -> TriggerGraph:
    """An Erdős–Rényi trigger graph (official ``create_random_trigger_graph``).

    Each node gets exactly ``int(F × ones_fraction)`` features set to one; labels are
    ``target_label`` for every node, or uniform random classes when it is None.
    """
    if num_nodes < 1 or num_features < 1 or num_classes < 2:
        raise ValueError("need num_nodes >= 1, num_features >= 1 and num_classes >= 2")
    if not 0 <= edge_prob <= 1 or not 0 < ones_fraction <= 1:
        raise ValueError(f"bad edge_prob {edge_prob} or ones_fraction {ones_fraction}")
    if target_label is not None and not 0 <= target_label < num_classes:
        raise ValueError(f"target_label must lie in 0..{num_classes - 1}, got {target_label}")
    rng = numpy_rng(seed, "trigger")
    adj = rng.random((num_nodes, num_nodes)) < edge_prob
    np.fill_diagonal(adj, False)  # directed draws, as in the official code
    edge_index = torch.from_numpy(np.stack(np.nonzero(adj)).astype(np.int64))
    k = int(num_features * ones_fraction)
    x = np.zeros((num_nodes, num_features), dtype=np.float32)
    cols = np.argsort(rng.random((num_nodes, num_features)), axis=1)[:, :k]
    np.put_along_axis(x, cols, 1.0, axis=1)
    if target_label is None:
        y = rng.integers(0, num_classes, num_nodes)
    else:
        y = np.full(num_nodes, target_label)
    return TriggerGraph(torch.from_numpy(x), edge_index, torch.from_numpy(y.astype(np.int64)))


def train_backdoor_watermarked(
    data: Data,
    trigger: TriggerGraph,
    model_config: ModelConfig | None = None,
    train_config: TrainConfig | None = None,
    *,
    alpha: float = 0.2,
    seed: int = 0,
    device=None,
) -> TrainedModel:
    """Train with CE(train) + α·CE(trigger graph) (official ``closure_random_backdoor_watermark``;
    a single summed loss, no PCGrad)."""
    if trigger.x.shape[1] != data.num_features:
        raise ValueError(
            f"trigger has {trigger.x.shape[1]} features, the graph {data.num_features}"
        )
    cfg = train_config or TrainConfig()
    device = device or default_device()
    model = build_model(
        data.num_features, _num_classes(data), model_config, seed=seed, device=device
    )
    trig = trigger.to(device)

    def extra(m: nn.Module) -> list[Tensor]:
        return [alpha * F.nll_loss(m(trig.x, trig.edge_index, dropout=0.0), trig.y)]

    plain = replace(cfg, pcgrad=False)
    history = fit(model, _on(data, device), plain, seed=seed, extra_losses=extra, desc="backdoor")
    return TrainedModel(model, history)


@dataclass(frozen=True)
class TriggerVerification:
    """Trigger accuracy of a suspect and its binomial test against chance."""

    trigger_accuracy: float
    chance: float
    z: float
    p_value: float

    def owned(self, alpha: float = 0.01) -> bool:
        return self.p_value < alpha


@torch.no_grad()
def trigger_verification(
    model: nn.Module, trigger: TriggerGraph, num_classes: int
) -> TriggerVerification:
    """Query the suspect on the trigger graph; one-sided binomial test of its accuracy vs 1/C."""
    device = next(model.parameters()).device
    trig = trigger.to(device)
    was = model.training
    model.eval()
    pred = model(trig.x, trig.edge_index).argmax(dim=-1)
    model.train(was)
    hits = int((pred == trig.y).sum())
    n, p0 = trig.num_nodes, 1.0 / num_classes
    acc = hits / n
    z = (hits - n * p0) / np.sqrt(n * p0 * (1 - p0))
    p = float(stats.binom.sf(hits - 1, n, p0))
    return TriggerVerification(acc, p0, float(z), p)
