"""Simulators and loaders."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

from icml26.gnn_watermark import load_graph, prepare_data, pyg_generator, save_graph, sbm_bow


def test_sbm_bow_is_sparse_binary_homophilous_and_seeded(tiny_graph):
    x, y, ei = tiny_graph.x, tiny_graph.y, tiny_graph.edge_index
    assert set(torch.unique(x).tolist()) <= {0.0, 1.0}
    assert 0.02 < x.mean() < 0.3
    assert (y[ei[0]] == y[ei[1]]).float().mean() > 0.7  # p_in >> p_out
    assert not (ei[0] == ei[1]).any()
    masks = torch.stack([tiny_graph.train_mask, tiny_graph.val_mask, tiny_graph.test_mask])
    assert (masks.sum(0) == 1).all() and tiny_graph.train_mask.sum() == 240
    again = sbm_bow(
        400, 4, 80, p_in=0.04, p_out=0.002, topic_features=12, common_features=10, seed=3
    )
    assert torch.equal(again.x, x) and torch.equal(again.edge_index, ei)


def test_prepare_data_checks_user_graphs():
    with pytest.raises(ValueError, match="no node features"):
        prepare_data(Data(edge_index=torch.tensor([[0], [1]]), y=torch.tensor([0, 1]), num_nodes=2))
    x = torch.rand(4, 3)
    with pytest.raises(ValueError, match="outside"):
        prepare_data(Data(x=x, edge_index=torch.tensor([[0], [7]]), y=torch.tensor([0, 1, 0, 1])))
    with pytest.raises(ValueError, match="one label per node"):
        prepare_data(Data(x=x, edge_index=torch.tensor([[0], [1]]), y=torch.tensor([0, 1])))
    with pytest.raises(TypeError):
        prepare_data({"x": x})
    ok = prepare_data(
        Data(x=x, edge_index=torch.tensor([[0, 1], [1, 0]]), y=torch.tensor([0, 1, 0, 1]))
    )
    assert ok.train_mask.sum() == 2


def test_graph_files_round_trip_without_pickle(tmp_path, tiny_graph):
    back = load_graph(save_graph(tiny_graph, tmp_path / "g.pt"))
    assert torch.equal(back.x, tiny_graph.x) and torch.equal(back.test_mask, tiny_graph.test_mask)
    np.savez(
        tmp_path / "g.npz",
        x=tiny_graph.x.numpy(),
        edge_index=tiny_graph.edge_index.numpy(),
        y=tiny_graph.y.numpy(),
    )
    assert load_graph(tmp_path / "g.npz").num_nodes == 400
    torch.save(tiny_graph, tmp_path / "pickled.pt")  # a pickled object, refused
    with pytest.raises(ValueError, match="dict of tensors"):
        load_graph(tmp_path / "pickled.pt")


def test_pyg_generators():
    fake = pyg_generator("fake", avg_num_nodes=200, num_channels=16, num_classes=3)
    assert fake.x.shape[1] == 16 and fake.train_mask.any()
    sbm = pyg_generator("sbm", block_sizes=[50, 50], num_channels=8)
    assert sbm.num_nodes == 100 and sbm.x.shape == (100, 8)
    with pytest.raises(ValueError):
        pyg_generator("nope")
