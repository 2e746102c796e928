"""The frozen-encoder probe and the spread measures."""

import numpy as np
import pytest
import torch

from icml26.merdg import effective_rank, feature_logdet
from icml26.merdg.probe import probe_accuracy


def test_logdet_and_effective_rank_track_spread():
    g = torch.Generator().manual_seed(0)
    white = torch.randn(500, 8, generator=g)
    low = white[:, :2] @ torch.randn(2, 8, generator=g) + 1e-2 * white
    assert feature_logdet(white) > feature_logdet(low) + 1.0
    assert 7.0 < effective_rank(white) <= 8.0 and effective_rank(low) < 3.0
    with pytest.raises(ValueError, match="NaN"):
        feature_logdet(np.full((4, 2), np.nan))


def test_probe_learns_a_separable_task():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 400)
    x = rng.standard_normal((400, 5)) + 3 * np.eye(3, 5)[y]
    acc = probe_accuracy(x[:300], y[:300], x[300:], y[300:], 3, seed=0)
    assert acc > 0.9
