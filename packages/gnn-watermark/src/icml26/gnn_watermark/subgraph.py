"""Secret (or random) subgraphs as one batch, and their explanations from a model.

The paper's explanation of a subgraph uses the model's outputs from a forward pass on
**that subgraph alone** (its features and induced edges; official
``separate_forward_passes_per_subgraph``), not a slice of full-graph outputs. Message
passing never crosses connected components, so one forward pass on the disjoint union
of B subgraphs gives exactly the B separate passes; that is how a batch is run here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor, nn
from torch_geometric.data import Data
from torch_geometric.utils import subgraph

from icml26.gnn_watermark.explain import RIDGE_LAMBDA, ridge_explanation


@dataclass(frozen=True)
class SubgraphBatch:
    """B induced subgraphs of n nodes each: features (B, n, F) and the union's edges."""

    nodes: Tensor  # (B, n) node ids in the parent graph
    x: Tensor  # (B, n, F)
    edge_index: Tensor  # (2, E_union), node ids b·n + local

    @property
    def size(self) -> tuple[int, int]:
        return int(self.nodes.shape[0]), int(self.nodes.shape[1])

    def to(self, device) -> SubgraphBatch:
        return SubgraphBatch(self.nodes.to(device), self.x.to(device), self.edge_index.to(device))


def induced_subgraphs(data: Data, nodes: Tensor | np.ndarray) -> SubgraphBatch:
    """Induced subgraphs of ``data`` on each row of ``nodes`` (B × n node ids)."""
    nodes = torch.as_tensor(np.asarray(nodes) if not isinstance(nodes, Tensor) else nodes)
    nodes = nodes.long().cpu()
    if nodes.dim() != 2 or nodes.shape[1] < 2:
        raise ValueError(f"nodes must be (B, n) with n >= 2, got {tuple(nodes.shape)}")
    n_total = data.num_nodes
    if nodes.min() < 0 or nodes.max() >= n_total:
        raise ValueError(f"subgraph node ids must lie in 0..{n_total - 1}")
    edge_index = data.edge_index.cpu()
    b, n = nodes.shape
    parts = []
    for i in range(b):
        sub_ei, _ = subgraph(nodes[i], edge_index, relabel_nodes=True, num_nodes=n_total)
        parts.append(sub_ei + i * n)
    union = torch.cat(parts, dim=1) if parts else torch.empty((2, 0), dtype=torch.long)
    x = data.x[nodes.to(data.x.device).reshape(-1)].reshape(b, n, -1)
    return SubgraphBatch(nodes=nodes, x=x, edge_index=union.to(data.x.device))


def subgraph_probabilities(
    model: nn.Module, batch: SubgraphBatch, *, dropout: float = 0.0
) -> Tensor:
    """Class probabilities of every subgraph node from a forward pass on the subgraphs alone,
    (B, n, C). Differentiable; the caller sets ``model.train()``/``eval()``."""
    b, n = batch.size
    logp = model(batch.x.reshape(b * n, -1), batch.edge_index, dropout=dropout)
    return logp.exp().reshape(b, n, -1)


def explain_subgraphs(
    model: nn.Module, batch: SubgraphBatch, *, lam: float = RIDGE_LAMBDA, dropout: float = 0.0
) -> Tensor:
    """β for each subgraph of ``batch`` from ``model``'s outputs on it, (B, F)."""
    return ridge_explanation(batch.x, subgraph_probabilities(model, batch, dropout=dropout), lam)


@torch.no_grad()
def explain_subgraphs_eval(
    model: nn.Module, batch: SubgraphBatch, *, lam: float = RIDGE_LAMBDA, chunk: int = 64
) -> Tensor:
    """:func:`explain_subgraphs` in eval mode without gradients, in chunks of subgraphs
    (verification: the suspect is queried for output probabilities only)."""
    was_training = model.training
    model.eval()
    try:
        b = batch.size[0]
        out = []
        for start in range(0, b, chunk):
            stop = min(start + chunk, b)
            part = _slice(batch, start, stop)
            out.append(explain_subgraphs(model, part, lam=lam))
        return torch.cat(out, dim=0)
    finally:
        model.train(was_training)


def _slice(batch: SubgraphBatch, start: int, stop: int) -> SubgraphBatch:
    if start == 0 and stop == batch.size[0]:
        return batch
    n = batch.size[1]
    ei = batch.edge_index
    keep = (ei[0] >= start * n) & (ei[0] < stop * n)
    return SubgraphBatch(batch.nodes[start:stop], batch.x[start:stop], ei[:, keep] - start * n)
