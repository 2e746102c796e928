import numpy as np
import pytest

from icml26.carve import coreset_replay, farthest_point_sampling, random_replay


def _data(rng):
    # 6 domains with heavy-tailed sizes; each model has 12 examples
    sizes = [20, 8, 4, 2, 1, 1]  # models per domain
    domains, models, m = [], [], 0
    for d, k in enumerate(sizes):
        for _ in range(k):
            domains += [d] * 12
            models += [m] * 12
            m += 1
    x = rng.normal(size=(len(domains), 16))
    return x, np.array(domains), np.array(models)


def test_coreset_is_domain_stratified_and_bounded():
    rng = np.random.default_rng(0)
    x, dom, mod = _data(rng)
    idx = coreset_replay(x, dom, mod, 0.1, rng, min_per_domain=5, max_per_model=3)
    budget = int(0.1 * len(dom))
    assert len(idx) <= budget and len(np.unique(idx)) == len(idx)
    counts = np.bincount(dom[idx], minlength=6)
    assert np.all(counts >= 5)  # every domain, rare ones included, keeps its floor
    # the big domain spreads over models: at most 3 per model while its quota allows
    big = idx[dom[idx] == 0]
    assert np.bincount(mod[big]).max() <= 3
    # random replay of the same budget leaves rare domains short of the floor
    short = [
        np.bincount(dom[random_replay(len(dom), 0.1, np.random.default_rng(s))], minlength=6).min()
        < 5
        for s in range(10)
    ]
    assert all(short)


def test_fps_picks_one_point_per_cluster():
    rng = np.random.default_rng(1)
    centers = np.eye(4) * 10
    x = np.repeat(centers, 10, axis=0) + rng.normal(scale=0.1, size=(40, 4))
    picked = farthest_point_sampling(x, np.arange(40), 4, rng)
    assert sorted(picked // 10) == [0, 1, 2, 3]
    assert len(farthest_point_sampling(x, np.arange(3), 5, rng)) == 3


def test_replay_rejects_bad_ratios():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError):
        random_replay(10, 1.5, rng)
    with pytest.raises(ValueError):
        coreset_replay(np.zeros((3, 2)), np.zeros(2), np.zeros(3), 0.1, rng)
