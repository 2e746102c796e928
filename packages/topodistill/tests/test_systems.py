"""Simulators: seeded, bounded, with the right causal graphs; noise at a fraction of sd."""

from __future__ import annotations

import numpy as np
import pytest

from icml26.topodistill import (
    add_observation_noise,
    coupled_logistic,
    lorenz96,
    rossler_lorenz,
    rossler_ring,
)
from icml26.topodistill.systems import random_sparse_graph


def test_rossler_lorenz_is_seeded_and_coupled():
    a = rossler_lorenz(300, np.random.default_rng(0), coupling=1.0, burn_in=200)
    b = rossler_lorenz(300, np.random.default_rng(0), coupling=1.0, burn_in=200)
    np.testing.assert_array_equal(a.data, b.data)
    assert a.data.shape == (300, 6) and np.all(np.isfinite(a.data))
    assert a.graph[a.names.index("x2"), a.names.index("y2")]
    assert not a.graph[a.names.index("y2"), a.names.index("x2")]
    null = rossler_lorenz(300, np.random.default_rng(0), coupling=0.0, burn_in=200)
    assert not null.graph[:3, 3:].any() and not null.graph[3:, :3].any()
    # the driver does not feel the coupling
    np.testing.assert_allclose(null.data[:, :3], a.data[:, :3])


def test_network_graphs():
    l96 = lorenz96(200, np.random.default_rng(0), d=8)
    assert l96.graph.sum(axis=0).tolist() == [3] * 8  # parents i-2, i-1, i+1
    assert l96.graph[6, 0] and l96.graph[7, 0] and l96.graph[1, 0]
    sparse = random_sparse_graph(6, np.random.default_rng(1), in_degree=2)
    assert sparse.sum(axis=0).tolist() == [2] * 6 and not np.diag(sparse).any()
    net = rossler_ring(300, np.random.default_rng(0), d=6, graph=sparse, burn_in=100)
    assert np.all(np.isfinite(net.data)) and np.array_equal(net.graph, sparse)
    ring = rossler_ring(300, np.random.default_rng(0), d=4, burn_in=100)
    assert ring.data.shape == (300, 4) and ring.graph[0, 1] and not ring.graph[1, 0]
    five = coupled_logistic(
        100,
        np.random.default_rng(0),
        r=(3.7,) * 3,
        beta=np.array([[0, 0, 0], [0.1, 0, 0], [0, 0.1, 0]]),
    )
    assert five.graph[0, 1] and five.graph[1, 2] and not five.graph[1, 0]


def test_observation_noise_scales_with_each_channel():
    rng = np.random.default_rng(0)
    data = np.c_[rng.standard_normal(20000), 10 * rng.standard_normal(20000)]
    noisy = add_observation_noise(data, 0.3, np.random.default_rng(1))
    ratio = (noisy - data).std(axis=0) / data.std(axis=0)
    np.testing.assert_allclose(ratio, 0.3, rtol=0.05)


def test_system_errors():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="2–5 species"):
        coupled_logistic(10, rng, r=(3.8,))
    with pytest.raises(ValueError, match="too strong"):
        coupled_logistic(100, rng, beta=np.array([[0, 10.0], [10.0, 0]]), max_tries=3)
    with pytest.raises(ValueError, match="non-negative"):
        rossler_lorenz(10, rng, coupling=-1)
    with pytest.raises(TypeError, match="Generator"):
        lorenz96(10, 0)
