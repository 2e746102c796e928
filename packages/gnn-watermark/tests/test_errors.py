"""Bad input gets a clear error at every public entry point, never a NaN or a deep traceback."""

from __future__ import annotations

import pytest
import torch

from icml26.gnn_watermark import (
    ModelConfig,
    TrainConfig,
    accuracy,
    attacker_nodes,
    build_model,
    distill,
    fine_tune,
    generate_key,
    match_count,
    random_subgraph_null,
    ridge_explanation,
    train_clean,
    train_watermarked,
    verify_ownership,
)


@pytest.fixture(params=[float("nan"), float("inf")], ids=["nan", "inf"])
def poisoned(request, tiny_graph):
    bad = tiny_graph.clone()
    bad.x = bad.x.clone()
    bad.x[7, 3] = request.param
    return bad


def test_non_finite_features_are_refused_everywhere(poisoned, tiny_key, trained):
    clean, wm = trained
    cfg = TrainConfig(lr=1e-2, epochs=2)
    small = ModelConfig(hidden=8, num_layers=2)
    calls = [
        lambda: train_clean(poisoned, small, cfg, device="cpu"),
        lambda: train_watermarked(poisoned, tiny_key, small, cfg, device="cpu"),
        lambda: accuracy(clean, poisoned),
        lambda: fine_tune(clean, poisoned, torch.tensor([1, 2]), lr=1e-3, epochs=1),
        lambda: distill(clean, poisoned, epochs=1),
        lambda: generate_key(poisoned, num_subgraphs=2, subgraph_size=5),
        lambda: match_count(clean, poisoned, tiny_key),
        lambda: verify_ownership(wm.model, poisoned, tiny_key, subgraph_null=False),
        lambda: random_subgraph_null(clean, poisoned, tiny_key),
    ]
    for call in calls:
        with pytest.raises(ValueError, match="NaN or inf"):
            call()


def test_ridge_explanation_refuses_non_finite_inputs():
    x, y = torch.rand(6, 4), torch.softmax(torch.randn(6, 3), -1)
    assert torch.isfinite(ridge_explanation(x, y)).all()
    for bad_x, bad_y in ((x.clone().fill_(float("nan")), y), (x, y.clone().fill_(float("inf")))):
        with pytest.raises(ValueError, match="NaN or inf"):
            ridge_explanation(bad_x, bad_y)


def test_out_of_range_node_ids_are_refused(tiny_graph, trained):
    clean, _ = trained
    n = tiny_graph.num_nodes
    for nodes in (torch.tensor([0, n]), torch.tensor([-1, 3])):
        with pytest.raises(ValueError, match=rf"0\.\.{n - 1}"):
            fine_tune(clean, tiny_graph, nodes, lr=1e-3, epochs=1)
    with pytest.raises(TypeError, match="integer"):
        fine_tune(clean, tiny_graph, torch.tensor([0.5, 1.0]), lr=1e-3, epochs=1)
    with pytest.raises(ValueError, match=rf"0\.\.{n - 1}"):
        attacker_nodes(tiny_graph, 0.05, exclude=torch.tensor([n + 5]))


def test_model_for_other_features_is_refused(tiny_graph, tiny_key):
    other = build_model(tiny_graph.num_features + 1, 4, ModelConfig(hidden=8), device="cpu")
    for call in (
        lambda: accuracy(other, tiny_graph),
        lambda: fine_tune(other, tiny_graph, torch.tensor([1, 2]), lr=1e-3, epochs=1),
        lambda: match_count(other, tiny_graph, tiny_key),
        lambda: distill(other, tiny_graph, epochs=1),
    ):
        with pytest.raises(ValueError, match="input features"):
            call()


def test_bad_edges_are_refused(tiny_graph, trained):
    clean, _ = trained
    bad = tiny_graph.clone()
    bad.edge_index = bad.edge_index.clone()
    bad.edge_index[0, 0] = tiny_graph.num_nodes
    with pytest.raises(ValueError, match="edge_index"):
        accuracy(clean, bad)
