"""Neighbour search: Theiler exclusion and agreement with brute force."""

from __future__ import annotations

import numpy as np
import torch

from icml26.topodistill import rossler_lorenz
from icml26.topodistill.embedding import delay_embed
from icml26.topodistill.neighbours import CandidateTable, library_neighbours, nearest_neighbours


def test_theiler_exclusion_removes_temporal_neighbours():
    # a finely sampled chaotic flow: many nearest state-space neighbours are the next samples
    x = rossler_lorenz(600, np.random.default_rng(0), coupling=0.0, burn_in=100).column("y1")
    v, times = delay_embed(x, 3, 2)
    _, idx = nearest_neighbours(
        v, v, 4, query_times=times, library_times=times, exclusion_radius=0, device="cpu"
    )
    gaps = np.abs(times[idx.numpy()] - times[:, None])
    assert np.mean(gaps <= 3) > 0.1  # without a window, many neighbours are the next samples
    _, idx = nearest_neighbours(
        v, v, 4, query_times=times, library_times=times, exclusion_radius=10, device="cpu"
    )
    gaps = np.abs(times[idx.numpy()] - times[:, None])
    assert gaps.min() > 10
    # the table used by CCM applies the same window
    table = CandidateTable.build(v, times, exclusion_radius=10, device="cpu")
    finite = torch.isfinite(table.dist).numpy()
    assert np.all(np.abs(times[table.order.numpy()] - times[:, None])[finite] > 10)


def test_library_neighbours_match_brute_force_including_fallback():
    rng = np.random.default_rng(1)
    pts = rng.standard_normal((300, 3))
    times = np.arange(300)
    for depth in (None, 12):  # a short prefix forces the exact fallback for many rows
        table = CandidateTable.build(pts, times, exclusion_radius=2, depth=depth, device="cpu")
        mask = np.zeros((4, 300), dtype=bool)
        for s in range(4):
            mask[s, rng.choice(300, 40, replace=False)] = True
        dist, idx = library_neighbours(table, torch.as_tensor(mask), 4)
        full = np.linalg.norm(pts[:, None] - pts[None], axis=-1)
        for s in range(4):
            d = np.where(mask[s][None] & (np.abs(times[:, None] - times[None]) > 2), full, np.inf)
            ref = np.sort(d, axis=1)[:, :4]
            np.testing.assert_allclose(dist[s].numpy(), ref, rtol=1e-9)
            assert np.all(mask[s][idx[s].numpy()])


def test_kdtree_table_and_direct_search_match_brute_force():
    from icml26.topodistill.neighbours import (
        KDTREE_MIN_POINTS,
        _kdtree_candidates,
        direct_search,
        use_direct_search,
    )

    rng = np.random.default_rng(2)
    m = 400
    pts = rng.standard_normal((m, 3))
    times = np.arange(m)
    full = np.linalg.norm(pts[:, None] - pts[None], axis=-1)
    near = np.abs(times[:, None] - times[None]) <= 3
    # KD-tree candidates: the first `depth` admissible neighbours, sorted, as the dense table
    order, dist = _kdtree_candidates(pts, times, 3, 25)
    ref = np.sort(np.where(near, np.inf, full), axis=1)[:, :25]
    np.testing.assert_allclose(dist, ref, rtol=1e-9)
    assert not np.any(near[np.arange(m)[:, None], order])
    dense = CandidateTable.build(pts, times, exclusion_radius=3, depth=25, device="cpu")
    np.testing.assert_allclose(dense.dist.numpy(), dist, rtol=1e-9)
    big = rng.standard_normal((KDTREE_MIN_POINTS + 10, 2))
    table = CandidateTable.build(big, np.arange(big.shape[0]), exclusion_radius=1, depth=8)
    assert table.order.shape == (big.shape[0], 8) and torch.isfinite(table.dist).all()
    # direct search for small libraries
    assert use_direct_search(m, 20, 4) and not use_direct_search(m, 300, 4)
    mask = np.zeros((3, m), dtype=bool)
    for s in range(3):
        mask[s, rng.choice(m, 20, replace=False)] = True
    d, idx = direct_search(
        torch.as_tensor(pts), torch.as_tensor(times), torch.as_tensor(mask), 4, 3
    )
    for s in range(3):
        ref = np.sort(np.where(mask[s][None] & ~near, full, np.inf), axis=1)[:, :4]
        np.testing.assert_allclose(d[s].numpy(), ref, rtol=1e-9)
        assert np.all(mask[s][idx[s].numpy()])
    # times that are not consecutive take the general path: |2i − 2j| <= 6 is |i − j| <= 3
    d2, _ = direct_search(
        torch.as_tensor(pts), torch.as_tensor(2 * times), torch.as_tensor(mask), 4, 6
    )
    np.testing.assert_allclose(d2.numpy(), d.numpy(), rtol=1e-12)
