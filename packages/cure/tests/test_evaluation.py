import numpy as np
import pytest

from icml26.cure import gcd_accuracy, make_gcd_data, prototype_similarity, sibling_cosine


def _data(y, labelled, n_old):
    x = np.random.default_rng(0).normal(size=(len(y), 3))
    return make_gcd_data(
        x, y, list(range(n_old)), list(range(n_old, int(max(y)) + 1)), labelled=np.asarray(labelled)
    )


def test_permuted_perfect_clustering_scores_100_100_100():
    y = np.repeat(np.arange(6), 5)
    lab = np.zeros(30, dtype=bool)
    lab[[0, 5, 10]] = True
    data = _data(y, lab, 3)
    perm = np.array([4, 2, 0, 5, 1, 3])
    acc = gcd_accuracy(data, perm[y])
    assert (acc.all, acc.old, acc.new) == (1.0, 1.0, 1.0)


def test_one_hungarian_map_over_all_not_per_subset():
    # old class 0 and new class 1 swapped onto one cluster each; a per-subset map would
    # score New = 1 by mapping cluster 0 to class 1 as well
    y = np.array([0, 0, 0, 0, 1, 1, 0, 1])
    lab = np.array([False] * 7 + [False])
    lab[6] = True
    data = _data(y, lab, 1)
    pred = np.array([0, 0, 0, 0, 0, 0, 0, 1])
    acc = gcd_accuracy(data, pred)
    # unlabelled: y = [0,0,0,0,1,1,1], pred = [0,0,0,0,0,0,1]: cluster 0 -> class 0
    assert acc.old == 1.0 and acc.new == pytest.approx(1 / 3)
    assert acc.all == pytest.approx(5 / 7)


def test_prediction_length_is_checked():
    y = np.repeat(np.arange(4), 3)
    data = _data(y, np.arange(12) < 2, 2)
    with pytest.raises(ValueError, match="one prediction per training sample"):
        gcd_accuracy(data, y[:5])


def test_sibling_cosine_uses_same_superclass_pairs_only():
    sim = np.array([[1.0, 0.8, 0.1], [0.8, 1.0, 0.2], [0.1, 0.2, 1.0]])
    assert sibling_cosine(sim, np.array([0, 0, 1])) == pytest.approx(0.8)


def test_prototype_similarity_is_ordered_by_class():
    y = np.repeat(np.arange(3), 4)
    data = _data(y, np.arange(12) == 0, 1)
    mu = np.eye(3)[[2, 0, 1]]  # prototype p predicts class perm
    pred = np.array([1, 2, 0])[y]  # class c is predicted as prototype (1, 2, 0)[c]
    sim = prototype_similarity(mu, data, pred)
    np.testing.assert_allclose(sim, np.eye(3), atol=1e-12)
