"""Surrogates keep what they promise: the spectrum, the blocks, the values."""

from __future__ import annotations

import numpy as np
import pytest

from icml26.topodistill import coupled_logistic
from icml26.topodistill.surrogates import (
    block_shuffle,
    make_surrogates,
    random_phase,
    shuffle,
    twin,
)


@pytest.fixture(scope="module")
def series():
    return coupled_logistic(300, np.random.default_rng(2)).column("x")


@pytest.mark.parametrize("n_points", [300, 299])
def test_random_phase_preserves_power_spectrum(series, n_points):
    x = series[:n_points]
    surr = random_phase(x, 5, np.random.default_rng(0))
    assert surr.shape == (5, n_points)
    np.testing.assert_allclose(
        np.abs(np.fft.rfft(surr, axis=1)),
        np.broadcast_to(np.abs(np.fft.rfft(x)), (5, n_points // 2 + 1)),
        rtol=1e-8,
        atol=1e-8,
    )
    np.testing.assert_allclose(surr.mean(axis=1), x.mean())
    assert not np.allclose(surr[0], x)  # the phases did change
    assert abs(np.corrcoef(surr[0], x)[0, 1]) < 0.5


def test_block_shuffle_preserves_blocks(series):
    surr = block_shuffle(series, 4, np.random.default_rng(1), block=30)
    blocks = {tuple(series[i : i + 30]) for i in range(0, 300, 30)}
    for s in surr:
        pieces = {tuple(s[i : i + 30]) for i in range(0, 300, 30)}
        assert pieces == blocks
    assert not np.allclose(surr[0], series)


def test_shuffle_and_twin_keep_values(series):
    rng = np.random.default_rng(3)
    np.testing.assert_allclose(np.sort(shuffle(series, 2, rng)[1]), np.sort(series))
    tw = twin(series, 3, rng, E=2, tau=1, recurrence_rate=0.1)
    assert tw.shape == (3, 300)
    assert np.all(np.isin(tw, series))  # every value is one of the observed values
    assert not np.allclose(tw[0], series)


def test_surrogate_errors(series):
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="unknown surrogate"):
        make_surrogates("fourier", series, 3, rng)
    with pytest.raises(ValueError, match="positive integer"):
        random_phase(series, 0, rng)
    with pytest.raises(TypeError, match="Generator"):
        random_phase(series, 3, 0)
    with pytest.raises(ValueError, match="NaN"):
        random_phase(np.r_[series, np.nan], 3, rng)
