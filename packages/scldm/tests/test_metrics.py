"""The generation metrics behave on known inputs."""

from __future__ import annotations

import numpy as np
import pytest

from icml26.scldm import (
    EvaluationSpace,
    correlation_error,
    log_normalize,
    mmd_rbf,
    real_vs_generated_accuracy,
    simulate_counts,
    sinkhorn_wasserstein,
)
from icml26.scldm.metrics import CellTypeClassifier, generation_metrics


def test_mmd_and_sinkhorn_on_shifted_clouds():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(300, 3)), rng.normal(size=(300, 3))
    shifted = y + np.array([2.0, 0.0, 0.0])
    assert mmd_rbf(x, x, 1.0) == pytest.approx(0.0, abs=1e-12)
    assert mmd_rbf(x, shifted, 1.0) > 10 * mmd_rbf(x, y, 1.0)
    w2_same, w2_shift = sinkhorn_wasserstein(x, y), sinkhorn_wasserstein(x, shifted)
    assert w2_shift > w2_same
    exact = sinkhorn_wasserstein(x, shifted, exact=True)
    assert abs(exact - 2.0) < 0.6 and exact <= w2_shift  # entropic blur only adds cost
    assert sinkhorn_wasserstein(x, shifted, p=1) > sinkhorn_wasserstein(x, y, p=1)


def test_correlation_error_sees_dependencies():
    rng = np.random.default_rng(0)
    shared = rng.normal(size=(500, 1))
    dependent = np.hstack([shared + 0.3 * rng.normal(size=(500, 1)) for _ in range(6)])
    independent = rng.permuted(dependent, axis=0)  # same marginals, no dependency
    assert correlation_error(dependent, dependent) == pytest.approx(0.0, abs=1e-12)
    assert correlation_error(dependent, independent) > 0.5


def test_knn_accuracy_is_half_for_same_distribution():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(300, 4)), rng.normal(size=(300, 4))
    assert 0.35 < real_vs_generated_accuracy(x, y) < 0.65
    assert real_vs_generated_accuracy(x, y + 5.0) > 0.95


def test_evaluation_space_and_metrics_on_real_vs_real():
    ad = simulate_counts(600, 50, n_cell_types=3, seed=2)
    space = EvaluationSpace.fit(ad.X[:300], n_components=10)
    same = generation_metrics(ad.X[300:450], ad.X[450:], space, wasserstein=False)
    noise = np.random.default_rng(0).poisson(ad.X[450:].mean(), size=ad.X[450:].shape)
    other = generation_metrics(ad.X[300:450], noise, space, wasserstein=False)
    assert (
        same["mmd"] < other["mmd"]
        and same["r2_mean"] > 0.9
        and same["corr_error"] < other["corr_error"]
    )
    clf = CellTypeClassifier(space).fit(ad.X[:300], ad.obs["cell_type"].to_numpy()[:300])
    assert clf.accuracy(ad.X[300:], ad.obs["cell_type"].to_numpy()[300:]) > 0.9
    with pytest.raises(ValueError, match="non-negative"):
        log_normalize(-np.ones((3, 3)))
