"""Simulators and loaders."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import torch
from torch_geometric.data import Data
from torch_geometric.utils import coalesce

from icml26.gnn_watermark import (
    load_edge_list,
    load_graph,
    prepare_data,
    pyg_generator,
    save_graph,
    sbm_bow,
)

FIXTURES = Path(__file__).parent / "fixtures"


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
    torch.save(tiny_graph, tmp_path / "data.pt")  # a PyG Data, read with weights_only=True
    assert torch.equal(load_graph(tmp_path / "data.pt").edge_index, tiny_graph.edge_index)
    torch.save({"x": tiny_graph.x, "f": Fraction(1, 3)}, tmp_path / "pickled.pt")
    with pytest.raises(ValueError, match="weights_only"):  # any other pickled object: refused
        load_graph(tmp_path / "pickled.pt")


def test_pyg_generators():
    fake = pyg_generator("fake", avg_num_nodes=200, num_channels=16, num_classes=3)
    assert fake.x.shape[1] == 16 and fake.train_mask.any()
    sbm = pyg_generator("sbm", block_sizes=[50, 50], num_channels=8)
    assert sbm.num_nodes == 100 and sbm.x.shape == (100, 8)
    with pytest.raises(ValueError):
        pyg_generator("nope")


def test_fixture_files_in_every_format_give_the_same_graph():
    """The 12-node fixture graph as CSV edge list + features + labels, as .npy, as .npz and
    as a PyG Data saved with torch.save (fixtures/make_fixtures.py writes them)."""
    csv = load_edge_list(FIXTURES / "edges.csv", FIXTURES / "features.csv", FIXTURES / "labels.csv")
    assert csv.x.shape == (12, 6) and csv.y.tolist() == [0, 1, 2] * 4
    assert csv.edge_index.shape[1] == 2 * 14 and csv.train_mask.sum() == 7  # undirected
    npy = load_edge_list(FIXTURES / "edges.npy", FIXTURES / "features.npy", FIXTURES / "labels.npy")
    for other in (npy, load_graph(FIXTURES / "graph.npz"), load_graph(FIXTURES / "graph_pyg.pt")):
        assert torch.equal(other.x, csv.x) and torch.equal(other.y, csv.y)
        assert torch.equal(coalesce(other.edge_index), csv.edge_index)
    pyg = load_graph(FIXTURES / "graph_pyg.pt")
    assert pyg.test_mask.tolist() == [i >= 10 for i in range(12)]  # its own masks are kept
    # (node, label) pairs in any order
    two = load_edge_list(
        FIXTURES / "edges.csv", FIXTURES / "features.csv", FIXTURES / "labels_by_node.csv"
    )
    assert torch.equal(two.y, csv.y)


def test_edge_list_errors_are_clear(tmp_path):
    (tmp_path / "f.csv").write_text("1,0\n0,1\n1,1\n")
    (tmp_path / "l.csv").write_text("label\n0\n1\n0\n")
    (tmp_path / "e.csv").write_text("src,dst\n0,1\n1,3\n")
    with pytest.raises(ValueError, match=r"outside 0\.\.2"):
        load_edge_list(tmp_path / "e.csv", tmp_path / "f.csv", tmp_path / "l.csv")
    (tmp_path / "e.csv").write_text("0,1\n1,2\n")
    (tmp_path / "nan.csv").write_text("1,0\nnan,1\n1,1\n")
    with pytest.raises(ValueError, match="NaN"):
        load_edge_list(tmp_path / "e.csv", tmp_path / "nan.csv", tmp_path / "l.csv")
    (tmp_path / "l2.csv").write_text("0\n1\n")
    with pytest.raises(ValueError, match=r"2 labels for 3 nodes"):
        load_edge_list(tmp_path / "e.csv", tmp_path / "f.csv", tmp_path / "l2.csv")
    (tmp_path / "e3.csv").write_text("0,1,2\n")
    with pytest.raises(ValueError, match="two columns"):
        load_edge_list(tmp_path / "e3.csv", tmp_path / "f.csv", tmp_path / "l.csv")
    ok = load_edge_list(tmp_path / "e.csv", tmp_path / "f.csv", tmp_path / "l.csv")
    assert ok.num_nodes == 3 and ok.edge_index.shape[1] == 4
