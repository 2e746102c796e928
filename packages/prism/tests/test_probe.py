import numpy as np
import pytest

from icml26.prism.probe import fit_logistic, linear_probe, residue_embeddings


def test_probe_reports_f1_and_pr_auc(world, make_model):
    _, rep = world
    model = make_model("prism")
    emb = residue_embeddings(model, rep.sequences[:4])
    assert emb.shape == (sum(len(s) for s in rep.sequences[:4]), 32)
    res = linear_probe(
        model, rep.sequences[:20], rep.ngl[:20], rep.sequences[20:30], rep.ngl[20:30]
    )
    assert 0.0 <= res.f1 <= 1.0 and 0.0 < res.pr_auc <= 1.0
    with pytest.raises(ValueError, match="one entry per residue"):
        linear_probe(model, rep.sequences[:2], rep.ngl[:1], rep.sequences[2:3], rep.ngl[2:3])


def test_logistic_fit_is_the_regularised_optimum():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 3))
    y = (x @ np.array([2.0, -1.0, 0.0]) + 0.5 + rng.logistic(size=400) > 0).astype(int)
    w = fit_logistic(x, y)
    p = 1 / (1 + np.exp(-(x @ w[:3] + w[3])))
    grad = np.r_[x.T @ (p - y) + w[:3], np.sum(p - y)]  # ½‖w‖² + Σ log-loss, free intercept
    assert np.abs(grad).max() < 1e-6
    assert w[0] > 1.0 and w[1] < -0.5 and abs(w[2]) < 0.5
