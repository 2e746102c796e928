"""Delay embedding, τ by mutual information, E by simplex projection."""

from __future__ import annotations

import numpy as np
import pytest

from icml26.topodistill import choose_E, choose_tau, coupled_logistic, delay_embed, rossler_lorenz
from icml26.topodistill.embedding import mutual_information


def test_delay_embed_rows_and_times():
    x = np.arange(10.0)
    v, t = delay_embed(x, 3, 2)
    np.testing.assert_array_equal(t, np.arange(4, 10))
    np.testing.assert_array_equal(v[0], [4.0, 2.0, 0.0])  # [x(t), x(t-τ), x(t-2τ)]
    np.testing.assert_array_equal(v[-1], [9.0, 7.0, 5.0])


def test_tau_near_a_quarter_period_of_the_rossler_oscillation():
    # Rössler time is scaled by 6 here: period 2π/6 ≈ 1.05, i.e. ≈ 76 samples of dt 0.01375
    x = rossler_lorenz(2000, np.random.default_rng(0), coupling=0.0, burn_in=500).column("x2")
    mi = mutual_information(x, 40)
    assert mi[0] == mi.max()
    assert 12 <= choose_tau(x) <= 26


def test_simplex_scan_picks_low_E_for_the_logistic_map():
    x = coupled_logistic(600, np.random.default_rng(1)).column("x")
    E, skills = choose_E(x, 1, max_E=6, device="cpu")
    assert E <= 3
    assert skills[E - 1] > 0.9


def test_embedding_errors():
    with pytest.raises(ValueError, match="NaN"):
        delay_embed([1.0, np.nan, 2.0, 3.0, 4.0], 2)
    with pytest.raises(ValueError, match="needs more than"):
        delay_embed(np.arange(10.0), 4, 4)
    with pytest.raises(ValueError, match="1-D"):
        delay_embed(np.zeros((5, 3)), 2)
    with pytest.raises(ValueError, match="positive integer"):
        delay_embed(np.arange(10.0), 2, 0)
