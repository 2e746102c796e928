"""Metrics against known values."""

import numpy as np
import pytest
import torch

from icml26.cfgmp.metrics import (
    classwise_w2,
    frechet_distance,
    gap_reduction,
    gap_reduction_per_step,
    mmd2,
    mode_precision,
    precision_recall,
    spread,
    trajectory_gap,
    wasserstein2,
)
from icml26.cfgmp.sampler import SampleResult

RNG = np.random.default_rng(0)


def test_w2_of_a_translation_is_its_length():
    x = RNG.normal(size=(200, 2))
    assert wasserstein2(x, x) == pytest.approx(0.0, abs=1e-12)
    shift = np.array([3.0, 4.0])
    assert wasserstein2(x, x + shift) == pytest.approx(5.0, rel=1e-9)
    per = classwise_w2(torch.as_tensor(x), np.arange(200) % 2, x + shift, np.arange(200) % 2)
    assert per == pytest.approx({0: 5.0, 1: 5.0})


def test_frechet_distance_of_gaussian_fits():
    a = RNG.normal(size=(4000, 3))
    b = 2.0 * RNG.normal(size=(4000, 3)) + 1.0
    # ‖Δμ‖² + tr(Σa + Σb − 2(ΣaΣb)^½) = 3 + 3(1 + 4 − 4) = 6
    assert frechet_distance(a, b) == pytest.approx(6.0, rel=0.08)
    assert frechet_distance(a, a) == pytest.approx(0.0, abs=1e-6)


def test_precision_recall_and_mode_precision():
    real = RNG.normal(size=(300, 2))
    p, r = precision_recall(real, real + 1e-9, k=3)
    assert p == 1.0 and r == 1.0
    p, r = precision_recall(real, real[:50] * 0.1, k=3)  # collapsed samples: precise, low recall
    assert p > 0.9 and r < 0.5
    means = np.array([[0.0, 0.0], [10.0, 0.0]])
    x = np.array([[0.5, 0.0], [9.0, 0.0], [0.0, 5.0]])
    assert mode_precision(x, [0, 1, 0], means, [1.0, 1.0], [0, 1], n_std=3) == pytest.approx(2 / 3)
    assert mode_precision(x, [1, 0, 0], means, [1.0, 1.0], [0, 1], n_std=3) == 0.0


def test_mmd_and_spread():
    x = RNG.normal(size=(200, 2))
    assert mmd2(x, x) == pytest.approx(0.0, abs=1e-12)
    assert mmd2(x, x + 3.0) > 0.5
    assert spread([2.0, 5.0, 3.0]) == 3.0


def test_gap_metrics_and_errors():
    res = SampleResult(
        x=torch.zeros(1, 1),
        nfe=0,
        model_calls=0,
        diagnostic_nfe=0,
        times=torch.linspace(0, 1, 4),
        gap=[4.0, 1.0, 4.0],
        gap_before=[4.0, 2.0, float("nan")],
        projections=[object(), object(), None],
    )
    assert trajectory_gap(res) == pytest.approx(3.0)
    assert trajectory_gap(res, corrected_only=True) == pytest.approx(2.5)
    # the t = 0 step (cut exactly 0) is left out unless asked for
    assert gap_reduction(res) == pytest.approx(0.5)
    assert gap_reduction(res, include_t0=True) == pytest.approx(1 - 5 / 6)
    per_step = gap_reduction_per_step(res)
    assert per_step[:2] == pytest.approx([0.0, 0.5]) and np.isnan(per_step[2])
    with pytest.raises(ValueError, match="diagnostics"):
        gap_reduction(
            SampleResult(
                x=torch.zeros(1),
                nfe=0,
                model_calls=0,
                diagnostic_nfe=0,
                times=torch.zeros(2),
                gap=[1.0],
                gap_before=[float("nan")],
                projections=[None],
            )
        )
    with pytest.raises(ValueError, match="dimension"):
        wasserstein2(np.zeros((3, 2)), np.zeros((3, 3)))
    with pytest.raises(ValueError, match="NaN"):
        frechet_distance(np.full((3, 2), np.nan), np.zeros((3, 2)))
    with pytest.raises(ValueError, match="k must"):
        precision_recall(np.zeros((3, 2)), np.zeros((3, 2)), k=5)
