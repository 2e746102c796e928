"""Causal graphs from CCM and TopoDistill-CCM; scoring; the Granger/PCMCI peers."""

from __future__ import annotations

import numpy as np
import pytest

from icml26.topodistill import (
    DistillConfig,
    build_manifolds,
    coupled_logistic,
    cross_map_significance,
    discover_graph,
    score_graph,
)


@pytest.fixture(scope="module")
def logistic():
    return coupled_logistic(800, np.random.default_rng(4))


def test_ccm_graph_finds_the_strong_link(logistic):
    graph = discover_graph(
        logistic.data,
        names=logistic.names,
        method="ccm",
        tau=1,
        samples=10,
        n_surrogates=39,
        seed=0,
        device="cpu",
    )
    assert graph.adjacency[0, 1]  # x -> y accepted
    assert graph.skill[0, 1] > 0.9 and graph.skill[0, 1] > graph.skill[1, 0]
    assert graph.p_value[0, 1] == pytest.approx(1 / 40)
    assert ("x", "y") in graph.edges()
    strong_only = np.array([[False, True], [False, False]])  # β_xy = 0.02 is near-invisible
    scores = score_graph(graph, strong_only)
    assert scores["auroc"] == 1.0 and scores["tpr"] == 1.0


def test_surrogate_test_rejects_an_unrelated_target(logistic):
    x = logistic.column("x")
    rng = np.random.default_rng(0)
    from icml26.topodistill.embedding import delay_embed

    v, t = delay_embed(logistic.column("y"), 2, 1)
    unrelated = coupled_logistic(800, np.random.default_rng(99)).column("x")[t]
    null = cross_map_significance(v, unrelated, samples=10, n_surrogates=19, rng=rng, device="cpu")
    real = cross_map_significance(
        v,
        x[t],
        samples=10,
        n_surrogates=39,
        rng=rng,
        device="cpu",
        surrogate="twin",
        surrogate_options={"E": 2},
    )
    assert not null.causal and null.p_value > 0.05
    assert real.causal and real.p_value == pytest.approx(1 / 40)


@pytest.mark.slow
def test_topodistill_manifolds_share_rows_with_ccm(logistic):
    cfg = DistillConfig(
        window=3,
        teacher_latent=4,
        teacher_hidden=16,
        teacher_epochs=2,
        student_window=5,
        student_hidden=16,
        student_steps=10,
        batch_size=64,
        perplexity=5.0,
    )
    td = build_manifolds(logistic.data, method="topodistill", tau=1, E=2, distill=cfg, device="cpu")
    cc = build_manifolds(
        logistic.data,
        method="ccm",
        tau=1,
        E=2,
        first_time=int(td.times[0]),
        theiler=td.theiler,
        device="cpu",
    )
    np.testing.assert_array_equal(td.times, cc.times)
    assert td.times[0] >= 400  # evaluation block only: the first half trained the students
    assert [p.shape for p in td.points] == [p.shape for p in cc.points]
    graph = discover_graph(logistic.data, manifolds=td, samples=5, n_surrogates=9, device="cpu")
    assert np.isfinite(graph.skill[0, 1]) and np.isnan(graph.skill[0, 0])


def test_granger_peer_direction(logistic):
    pytest.importorskip("statsmodels")
    from icml26.topodistill.baselines import granger_pvalues

    p = granger_pvalues(logistic.data, max_lag=2)
    assert p[0, 1] < 1e-6  # x Granger-causes y
    assert p[0, 1] < p[1, 0]


def test_discover_errors(logistic):
    with pytest.raises(ValueError, match="method"):
        build_manifolds(logistic.data, method="gc")
    with pytest.raises(ValueError, match="d >= 2"):
        build_manifolds(logistic.data[:, :1])
    with pytest.raises(ValueError, match="truth"):
        graph = discover_graph(
            logistic.data, method="ccm", tau=1, E=2, samples=2, n_surrogates=0, device="cpu"
        )
        score_graph(graph, np.zeros((3, 3)))
