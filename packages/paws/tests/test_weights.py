import math

import numpy as np
import pytest

from icml26.paws import (
    effective_sample_size,
    implied_epsilon,
    log_weights,
    neff_target,
    solve_temperature,
)


def test_neff_rises_with_lambda():
    adv = np.random.default_rng(0).normal(size=300) * 3
    lams = np.geomspace(1e-3, 1e3, 40)
    neff = [effective_sample_size(log_weights(adv, lam)) for lam in lams]
    assert np.all(np.diff(neff) >= -1e-9)
    assert neff[0] == pytest.approx(1.0, abs=0.05) and neff[-1] == pytest.approx(300, rel=0.01)


@pytest.mark.parametrize("target", [3.0, 30.0, 150.0, 290.0])
def test_bisection_meets_target_within_one_percent(target):
    adv = np.random.default_rng(1).standard_t(3, size=300)
    t = solve_temperature(adv, target)
    assert abs(t.n_eff - target) <= 0.01 * target
    # the returned weights are those of the returned λ, normalised to mean 1
    w = np.exp(log_weights(adv, t.lam))
    np.testing.assert_allclose(t.weights, w / w.mean(), rtol=1e-10)
    assert t.epsilon > 0


def test_no_overflow_at_huge_advantages():
    adv = np.array([1e4, 1e4 - 1.0, 0.0, -1e4])
    lw = log_weights(adv, 1e-3)
    assert np.all(np.isfinite(lw)) and lw.max() == 0.0
    t = solve_temperature(adv, 2.0)
    assert np.all(np.isfinite(t.weights)) and abs(t.n_eff - 2.0) <= 0.02


def test_implied_epsilon_matches_kl_by_hand():
    lw = np.log(np.array([1.0, 1.0, 2.0]))
    p = np.array([0.25, 0.25, 0.5])
    assert implied_epsilon(lw) == pytest.approx(float(np.sum(p * np.log(p * 3))))
    assert effective_sample_size(lw) == pytest.approx(16 / 6)


def test_constant_advantages_give_uniform_weights():
    t = solve_temperature(np.full(10, 3.0), 5.0)
    assert math.isinf(t.lam) and t.n_eff == 10 and np.all(t.weights == 1)


@pytest.mark.parametrize("bad", [0.0, -0.1, 1.5, float("nan")])
def test_neff_target_outside_unit_interval(bad):
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        neff_target(bad, 100)


def test_bad_inputs():
    with pytest.raises(TypeError):
        neff_target("10%", 100)
    with pytest.raises(ValueError, match="target"):
        solve_temperature(np.arange(5.0), 6.0)
    with pytest.raises(ValueError, match="NaN"):
        solve_temperature(np.array([1.0, np.nan]), 1.5)
    with pytest.raises(ValueError, match="empty"):
        solve_temperature(np.array([]), 1.0)
    with pytest.raises(ValueError, match="positive"):
        log_weights(np.arange(3.0), 0.0)
