from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats

from icml26.shared import metrics as M

labels = st.lists(st.integers(0, 4), min_size=2, max_size=60)
finite = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)


@given(y=labels, perm_seed=st.integers(0, 2**16))
def test_cluster_accuracy_invariant_to_relabelling(y, perm_seed):
    y = np.array(y)
    perm = np.random.default_rng(perm_seed).permutation(10)
    assert M.cluster_accuracy(y, perm[y]) == 1.0


@given(y_true=labels, y_pred=st.lists(st.integers(0, 6), min_size=60, max_size=60))
def test_cluster_accuracy_bounds_and_chance(y_true, y_pred):
    y_true = np.array(y_true)
    y_pred = np.array(y_pred[: len(y_true)])
    acc = M.cluster_accuracy(y_true, y_pred)
    # a single cluster already matches the largest class
    assert np.bincount(y_true).max() / len(y_true) - 1e-12 <= max(
        acc, M.cluster_accuracy(y_true, np.zeros_like(y_true))
    )
    assert 0.0 <= acc <= 1.0


def test_cluster_accuracy_known_value():
    y_true = [0, 0, 0, 1, 1, 1]
    y_pred = [1, 1, 0, 0, 0, 0]  # best map 1->0, 0->1 gets 5 of 6
    assert M.cluster_accuracy(y_true, y_pred) == pytest.approx(5 / 6)


def test_category_discovery_split():
    y_true = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    y_pred = np.array([5, 5, 6, 6, 7, 8, 8, 7])  # old classes 0,1 perfect; new 2,3 half
    acc = M.category_discovery_accuracy(y_true, y_pred, old_classes=[0, 1])
    assert (acc.old, acc.new, acc.all) == (1.0, 0.5, 0.75)
    with pytest.raises(ValueError, match="old and new"):
        M.category_discovery_accuracy(y_true, y_pred, old_classes=[0, 1, 2, 3])


@settings(max_examples=30, deadline=None)
@given(x=arrays(float, (12, 3), elements=finite), y=arrays(float, (9, 3), elements=finite))
def test_mmd_zero_on_self_and_symmetric(x, y):
    assert M.mmd2_rbf(x, x) == pytest.approx(0.0, abs=1e-12)
    assert M.mmd2_rbf(x, y) == pytest.approx(M.mmd2_rbf(y, x), abs=1e-12)
    assert M.mmd2_rbf(x, y) >= 0


def test_mmd_detects_shift_and_unbiased_is_near_zero_for_same_law():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(300, 2)), rng.normal(size=(300, 2))
    shifted = rng.normal(size=(300, 2)) + 1.0
    assert M.mmd2_rbf(a, shifted) > 10 * M.mmd2_rbf(a, b)
    assert abs(M.mmd2_rbf(a, b, unbiased=True)) < 0.01
    with pytest.raises(ValueError, match="dimension"):
        M.mmd2_rbf(a, rng.normal(size=(5, 3)))
    with pytest.raises(ValueError, match="NaN"):
        M.mmd2_rbf(np.full((3, 2), np.nan), b)


@given(
    y=st.lists(st.integers(0, 1), min_size=2, max_size=50),
    s=st.lists(finite, min_size=50, max_size=50),
)
def test_auroc_matches_mann_whitney_and_flips(y, s):
    y = np.array(y)
    s = np.array(s[: len(y)])
    if y.min() == y.max():
        with pytest.raises(ValueError, match="positive and negative"):
            M.auroc(y, s)
        return
    a = M.auroc(y, s)
    u = stats.mannwhitneyu(s[y == 1], s[y == 0]).statistic
    assert a == pytest.approx(u / (y.sum() * (1 - y).sum()))
    assert M.auroc(1 - y, s) == pytest.approx(1 - a)


def test_average_precision_known_values():
    assert M.average_precision([1, 0, 1, 0], [0.9, 0.8, 0.7, 0.1]) == pytest.approx((1 + 2 / 3) / 2)
    assert M.average_precision([0, 1], [0.9, 0.1]) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="positive"):
        M.average_precision([0, 0], [0.1, 0.2])


@given(x=st.lists(finite, min_size=3, max_size=40, unique=True))
def test_spearman_of_monotone_map_is_one(x):
    x = np.array(x)
    assert M.spearman(x, x**3 + x) == pytest.approx(1.0)
    assert M.spearman(x, -x) == pytest.approx(-1.0)


def test_spearman_constant_is_error():
    with pytest.raises(ValueError, match="constant"):
        M.spearman([1, 1, 1], [1, 2, 3])


def test_regression_errors():
    assert M.rmse([1, 2, 3], [1, 2, 5]) == pytest.approx(np.sqrt(4 / 3))
    assert M.mape([2, 4], [1, 4]) == pytest.approx(0.25)
    with pytest.raises(ValueError, match="zero"):
        M.mape([0, 1], [1, 1])
    with pytest.raises(ValueError, match="shape"):
        M.rmse([1, 2], [1, 2, 3])


def test_over_seed_summaries():
    assert M.mean_sd([1, 2, 3]) == (2.0, 1.0)
    lo, hi = M.bootstrap_ci([1.0, 2.0, 3.0, 4.0], rng=np.random.default_rng(1))
    assert 1.0 <= lo < 2.5 < hi <= 4.0
    assert M.paired_win_rate([2, 2, 1], [1, 2, 2]) == pytest.approx(0.5)
    assert M.paired_win_rate([1.0, 1.0], [1.05, 2.0], margin=0.1) == pytest.approx(0.25)
    assert M.paired_win_rate([1, 3], [2, 2], higher_is_better=False) == 0.5
    with pytest.raises(ValueError, match="length"):
        M.paired_win_rate([1, 2], [1])


@pytest.mark.parametrize(
    "call",
    [
        lambda: M.cluster_accuracy([[0, 1]], [[0, 1]]),
        lambda: M.cluster_accuracy([0.5, 1.0], [0, 1]),
        lambda: M.auroc([0, 2], [0.1, 0.2]),
        lambda: M.mean_sd([]),
        lambda: M.bootstrap_ci([1.0], level=1.5),
        lambda: M.paired_win_rate([np.inf], [1.0]),
    ],
)
def test_bad_input_is_value_error(call):
    with pytest.raises(ValueError):
        call()
