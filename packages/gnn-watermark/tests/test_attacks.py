"""Each attack changes the weights as specified and leaves the input model alone."""

from __future__ import annotations

import pytest
import torch

from icml26.gnn_watermark import (
    accuracy,
    attacker_nodes,
    distill,
    fine_tune,
    prunable_weights,
    prune,
    sparsity,
)
from icml26.gnn_watermark.attacks import STUDENT


def _params(model):
    return [p.detach().clone() for p in model.parameters()]


def test_magnitude_pruning_zeroes_the_smallest_weights(trained):
    _, wm = trained
    before = _params(wm.model)
    pruned = prune(wm.model, 0.3)
    for (m_orig, _), (m_new, _) in zip(
        prunable_weights(wm.model), prunable_weights(pruned), strict=True
    ):
        w, v = m_orig.weight.detach(), m_new.weight.detach()
        k = round(0.3 * w.numel())
        assert int((v == 0).sum()) >= k
        kept = v != 0
        assert torch.equal(v[kept], w[kept])  # survivors untouched
        assert w[~kept].abs().max() <= w[kept].abs().min()  # the smallest magnitudes went
    assert all(torch.equal(a, b) for a, b in zip(before, _params(wm.model), strict=True))
    assert sparsity(prune(wm.model, 0.9)) >= 0.89
    with pytest.raises(ValueError):
        prune(wm.model, 1.5)


def test_structured_pruning_removes_whole_rows(trained):
    _, wm = trained
    pruned = prune(wm.model, 0.5, structured=True)
    for m, _ in prunable_weights(pruned):
        zero_rows = int((m.weight.detach().abs().sum(1) == 0).sum())
        assert zero_rows == round(0.5 * m.weight.shape[0])


def test_fine_tuning_moves_weights_on_attacker_nodes_only(tiny_graph, tiny_key, trained):
    _, wm = trained
    nodes = attacker_nodes(tiny_graph, 0.2, exclude=tiny_key.nodes, pool="val", seed=0)
    assert len(nodes) == 80 and tiny_graph.val_mask[nodes].all()
    assert not set(nodes.tolist()) & set(tiny_key.nodes.reshape(-1).tolist())
    before = _params(wm.model)
    tuned = fine_tune(wm.model, tiny_graph, nodes, lr=1e-3, epochs=5)
    assert any(
        not torch.equal(a, b.detach()) for a, b in zip(before, tuned.parameters(), strict=True)
    )
    assert all(torch.equal(a, b) for a, b in zip(before, _params(wm.model), strict=True))
    with pytest.raises(ValueError, match="at least one"):
        fine_tune(wm.model, tiny_graph, torch.tensor([], dtype=torch.long), lr=1e-3)
    with pytest.raises(ValueError, match="eligible"):
        attacker_nodes(tiny_graph, 0.5, pool="val")


def test_distillation_trains_a_fresh_student(tiny_graph, trained):
    _, wm = trained
    student = distill(wm.model, tiny_graph, epochs=40, lr=1e-2)
    assert student.config == STUDENT and student is not wm.model
    assert accuracy(student, tiny_graph) > 0.6
    with pytest.raises(TypeError):
        distill(torch.nn.Linear(3, 3), tiny_graph)


def test_official_fine_tuning_sees_only_its_induced_subgraph(tiny_graph, tiny_key, trained):
    from icml26.gnn_watermark import FULL_GRAPH_FINETUNE, OFFICIAL_FINETUNE

    _, wm = trained
    nodes = OFFICIAL_FINETUNE.nodes(tiny_graph, tiny_key.nodes, seed=1)
    assert len(nodes) == int(0.015 * tiny_graph.num_nodes) and tiny_graph.test_mask[nodes].all()
    assert not set(nodes.tolist()) & set(tiny_key.nodes.reshape(-1).tolist())
    # features outside the attacker's nodes cannot matter to the induced-subgraph attack ...
    other = tiny_graph.clone()
    other.x = tiny_graph.x.clone()
    outside = torch.ones(tiny_graph.num_nodes, dtype=torch.bool)
    outside[nodes] = False
    other.x[outside] = 1 - other.x[outside]
    a = fine_tune(wm.model, tiny_graph, nodes, lr=1e-3, epochs=3, seed=2)
    b = fine_tune(wm.model, other, nodes, lr=1e-3, epochs=3, seed=2)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))
    # ... but they do matter to full-graph forwards
    c = fine_tune(wm.model, tiny_graph, nodes, lr=1e-3, epochs=3, induced=False, seed=2)
    d = fine_tune(wm.model, other, nodes, lr=1e-3, epochs=3, induced=False, seed=2)
    assert any(not torch.equal(p, q) for p, q in zip(c.parameters(), d.parameters(), strict=True))
    _tuned, used = FULL_GRAPH_FINETUNE.run(wm.model, tiny_graph, lr=1e-3, exclude=tiny_key.nodes)
    assert len(used) == 80 and tiny_graph.val_mask[used].all()
