"""The reconstructed per-epoch augmentation of the training graph."""

from __future__ import annotations

import pytest
import torch

from icml26.gnn_watermark import Augmentation, augment_training_graph


def test_augmentation_spares_protected_nodes_and_is_seeded(tiny_graph, tiny_key):
    x, ei = tiny_graph.x, tiny_graph.edge_index
    protected = tiny_key.nodes.reshape(-1)
    train = torch.nonzero(tiny_graph.train_mask, as_tuple=True)[0]
    eligible = train[~torch.isin(train, protected)]
    aug = Augmentation(p=0.5, node_drop=0.5, mixup=1.0, feature_mask=0.3, edge_drop=0.5)
    x2, ei2, kept = augment_training_graph(x, ei, eligible, aug, torch.Generator().manual_seed(0))
    assert torch.equal(x2[protected], x[protected])  # the secret subgraphs are never touched
    dropped = eligible[~torch.isin(eligible, kept)]
    assert 0 < len(dropped) < len(eligible) and len(kept) + len(dropped) == len(eligible)
    assert not torch.isin(ei2, dropped).any()  # dropped nodes lose their edges
    assert ei2.shape[1] < ei.shape[1] and not torch.equal(x2, x)
    again = augment_training_graph(x, ei, eligible, aug, torch.Generator().manual_seed(0))
    assert torch.equal(again[0], x2) and torch.equal(again[1], ei2)
    off = augment_training_graph(x, ei, eligible, Augmentation(), torch.Generator())
    assert off[0] is x and off[1] is ei
    with pytest.raises(ValueError):
        Augmentation(p=1.5)
