import numpy as np
import pytest
from scipy import stats

from icml26.orloop import (
    Newsvendor,
    PullToCentreAgent,
    RationalAgent,
    evaluate_bias,
    pull_to_centre_alpha,
    pull_to_centre_fit,
    sample_splits,
)
from icml26.orloop.orbias import expected_pull_bias
from icml26.shared import numpy_rng


def test_closed_form_optimum_is_the_profit_maximiser():
    for dist in ("normal", "uniform", "poisson"):
        nv = Newsvendor(dist, 60.0, 12.0 if dist != "poisson" else np.sqrt(60), 9.0, 5.0, 1.0)
        q = nv.optimal_quantity()
        assert q == pytest.approx(float(nv.frozen().ppf(nv.critical_ratio)))
        best = max(np.arange(round(q) - 3, round(q) + 4), key=nv.expected_profit)
        assert abs(best - q) <= 1.0
    assert Newsvendor("normal", 50, 10, 12, 4, 0).critical_ratio == pytest.approx(8 / 12)
    assert stats.norm.cdf(
        Newsvendor("normal", 50, 10, 12, 4, 0).optimal_quantity(), 50, 10
    ) == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="price > cost > salvage"):
        Newsvendor("normal", 50, 10, 4, 5, 0)


def test_bias_metric_recovers_the_pull_to_centre_alpha():
    in_dist, out_dist = sample_splits(numpy_rng(0, "t"), 200, 200)
    rep = evaluate_bias(PullToCentreAgent(0.3, noise=0.0), in_dist, out_dist)
    assert rep.alpha == pytest.approx(0.3, abs=1e-9)
    noisy = evaluate_bias(PullToCentreAgent(0.3, noise=0.02, seed=1), in_dist, out_dist)
    assert abs(noisy.alpha - 0.3) < 0.02
    # a level bias (+5 % on every order) goes to the intercept, not into α
    items = in_dist + out_dist
    qs = np.array([it.optimal_quantity() for it in items])
    mu = np.array([it.mean for it in items])
    q = 0.3 * mu + 0.7 * qs + 0.05 * qs
    alpha, beta = pull_to_centre_fit(q, qs, mu)
    assert alpha == pytest.approx(0.3, abs=1e-9) and beta == pytest.approx(0.05, abs=1e-9)
    g = (mu - qs) / qs
    assert abs(float(g @ ((q - qs) / qs) / (g @ g)) - 0.3) > 0.02  # through the origin: off
    expected = expected_pull_bias(out_dist, 0.3) - expected_pull_bias(in_dist, 0.3)
    assert np.sign(noisy.drift) == np.sign(expected) == -1  # high-margin OOD: under-ordering
    rational = evaluate_bias(RationalAgent(), in_dist, out_dist)
    assert rational.bias_id == 0 and rational.drift == 0
    with pytest.raises(ValueError, match="identifiable"):
        pull_to_centre_alpha([1.0, 1.5], [2.0, 3.0], [2.0, 3.0])
