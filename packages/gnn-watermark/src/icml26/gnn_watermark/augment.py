"""Per-epoch augmentation of the training graph (official ``augment_data``; reconstructed).

The official presets augment, every epoch, a random fraction ``p`` of the training
nodes that are *not* in the secret subgraphs (``ignore_subgraphs=True``) with the
``grafog`` transforms NodeDrop, NodeMixUp, NodeFeatureMasking and edge dropping.
``grafog`` is unmaintained, so the transforms are reconstructed here with the same
knobs:

- node drop (p_nd): a selected node leaves the loss and loses its edges this epoch;
- mixup (λ): a selected node's features become m·x_i + (1−m)·x_π(i), m ~ Beta(λ, λ)
  folded to m ≥ ½ so the node keeps its own label (hard labels, as the official NLL loss);
- feature masking (p_fm): each feature column is zeroed on the selected nodes w.p. p_fm;
- edge drop (p_ed): an edge between two selected nodes is removed w.p. p_ed (the
  official code passes this rate to NodeDrop by mistake; here it drops edges).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(frozen=True)
class Augmentation:
    """Knobs of the official ``augment_kwargs`` (0 disables a transform)."""

    p: float = 0.0
    node_drop: float = 0.0
    mixup: float = 0.0
    feature_mask: float = 0.0
    edge_drop: float = 0.0

    def __post_init__(self) -> None:
        for name in ("p", "node_drop", "feature_mask", "edge_drop"):
            v = getattr(self, name)
            if not 0 <= v <= 1:
                raise ValueError(f"augmentation {name} must lie in [0, 1], got {v}")
        if self.mixup < 0:
            raise ValueError(f"mixup λ must be >= 0, got {self.mixup}")

    @property
    def active(self) -> bool:
        return self.p > 0 and any((self.node_drop, self.mixup, self.feature_mask, self.edge_drop))


def augment_training_graph(
    x: Tensor,
    edge_index: Tensor,
    loss_nodes: Tensor,
    aug: Augmentation,
    generator: torch.Generator,
) -> tuple[Tensor, Tensor, Tensor]:
    """One epoch's augmented ``(x, edge_index, loss_nodes)``.

    ``loss_nodes`` are the training nodes eligible for augmentation (the secret subgraph
    nodes excluded by the caller); the returned loss nodes omit dropped nodes.
    """
    if not aug.active or loss_nodes.numel() == 0:
        return x, edge_index, loss_nodes
    dev = x.device
    n = x.shape[0]

    def rand(*shape: int) -> Tensor:
        return torch.rand(*shape, generator=generator, device=generator.device).to(dev)

    chosen = loss_nodes[rand(loss_nodes.numel()) < aug.p]
    selected = torch.zeros(n, dtype=torch.bool, device=dev)
    selected[chosen] = True
    x = x.clone()

    if aug.mixup > 0 and chosen.numel() > 1:
        # torch's Beta sampler reads the global RNG: seed it from our generator
        sub_seed = int(torch.randint(2**31 - 1, (1,), generator=generator).item())
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(sub_seed)
            m = torch.distributions.Beta(aug.mixup, aug.mixup).sample((chosen.numel(),))
        m = m.to(dev)
        m = torch.maximum(m, 1 - m).unsqueeze(1)
        partner = chosen[torch.randperm(chosen.numel(), generator=generator).to(dev)]
        x[chosen] = m * x[chosen] + (1 - m) * x[partner]
    if aug.feature_mask > 0 and chosen.numel():
        cols = rand(x.shape[1]) < aug.feature_mask
        x[chosen.unsqueeze(1), cols.nonzero(as_tuple=True)[0].unsqueeze(0)] = 0.0
    dropped = torch.zeros(n, dtype=torch.bool, device=dev)
    if aug.node_drop > 0 and chosen.numel():
        dropped[chosen[rand(chosen.numel()) < aug.node_drop]] = True
    keep = ~(dropped[edge_index[0]] | dropped[edge_index[1]])
    if aug.edge_drop > 0:
        both = selected[edge_index[0]] & selected[edge_index[1]]
        keep &= ~(both & (rand(edge_index.shape[1]) < aug.edge_drop))
    return x, edge_index[:, keep], loss_nodes[~dropped[loss_nodes]]
