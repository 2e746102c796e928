"""CCM: the logistic-map asymmetry, the direction convention, agreement with pyEDM, errors."""

from __future__ import annotations

import numpy as np
import pytest

from icml26.topodistill import ccm, coupled_logistic, cross_map, load_sardine_anchovy
from icml26.topodistill.baselines import pyedm_ccm


@pytest.fixture(scope="module")
def logistic():
    system = coupled_logistic(400, np.random.default_rng(0))
    return system.column("x"), system.column("y")


def test_logistic_asymmetry_and_convergence(logistic):
    x, y = logistic  # x drives y (β_yx = 0.1 ≫ β_xy = 0.02)
    y_x = ccm(y, x, E=2, lib_sizes=[20, 100, 390], samples=20, seed=1, device="cpu")
    x_y = ccm(x, y, E=2, lib_sizes=[20, 100, 390], samples=20, seed=1, device="cpu")
    # M_y cross-maps x well: evidence for x -> y; the reverse is weaker
    assert y_x.final_skill > 0.9
    assert y_x.final_skill > x_y.final_skill + 0.15
    assert np.all(np.diff(y_x.mean_skill) > 0)  # skill converges with the library
    assert y_x.convergence > 0


@pytest.mark.parametrize("exclusion", [0, 3])
def test_matches_pyedm_and_its_direction_convention(logistic, exclusion):
    x, y = logistic
    libs = [50, 150, 390]
    ref_xy, ref_yx = pyedm_ccm(x, y, E=2, lib_sizes=libs, samples=40, exclusion_radius=exclusion)
    assert ref_xy.label == "x:y" and ref_yx.label == "y:x"
    ours_xy = ccm(
        x, y, E=2, lib_sizes=libs, samples=40, exclusion_radius=exclusion, seed=3, device="cpu"
    )
    ours_yx = ccm(
        y, x, E=2, lib_sizes=libs, samples=40, exclusion_radius=exclusion, seed=4, device="cpu"
    )
    np.testing.assert_allclose(ours_xy.mean_skill, ref_xy.mean_skill, atol=0.02)
    np.testing.assert_allclose(ours_yx.mean_skill, ref_yx.mean_skill, atol=0.02)
    # pyEDM's "y:x" (M_y cross-maps x) is the strong one: x drives y
    assert ref_yx.final_skill > ref_xy.final_skill


def test_matches_pyedm_on_sardine_anchovy():
    data = load_sardine_anchovy()
    a, s = data.column("anchovy"), data.column("sio_sst")
    libs = [20, 45, a.size - 2]  # the last is every embedded point: no sampling left
    ref_as, ref_sa = pyedm_ccm(a, s, E=3, lib_sizes=libs, samples=500)
    ours_as = ccm(a, s, E=3, lib_sizes=libs, samples=500, seed=5, device="cpu")
    ours_sa = ccm(s, a, E=3, lib_sizes=libs, samples=500, seed=6, device="cpu")
    np.testing.assert_allclose(ours_as.mean_skill, ref_as.mean_skill, atol=0.02)
    np.testing.assert_allclose(ours_sa.mean_skill, ref_sa.mean_skill, atol=0.02)
    # with the whole manifold as library both are deterministic: they must coincide
    assert ours_as.final_skill == pytest.approx(ref_as.final_skill, abs=1e-9)
    assert ours_sa.final_skill == pytest.approx(ref_sa.final_skill, abs=1e-9)


def test_full_library_is_deterministic_and_targets_batch(logistic):
    x, y = logistic
    from icml26.topodistill.embedding import delay_embed

    v, t = delay_embed(y, 2, 1)
    targets = np.stack([x[t], -x[t], y[t]])
    rng = np.random.default_rng(0)
    many = cross_map(v, targets, [v.shape[0]], samples=2, rng=rng, device="cpu")
    one = cross_map(v, x[t], [v.shape[0]], samples=1, rng=rng, device="cpu")
    assert many.shape == (1, 2, 3)
    assert many[0, 0, 0] == pytest.approx(many[0, 1, 0])  # L = M: every subsample is the same
    assert many[0, 0, 0] == pytest.approx(one[0, 0, 0])
    assert many[0, 0, 1] == pytest.approx(many[0, 0, 0])  # ρ is blind to the target's sign


def test_bad_series_raise_clear_errors(logistic):
    x, y = logistic
    bad = x.copy()
    bad[10] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        ccm(bad, y, E=2)
    with pytest.raises(ValueError, match="needs more than"):
        ccm(x[:5], y[:5], E=3, tau=1)
    with pytest.raises(ValueError, match="needs more than"):
        ccm(x, y, E=5, tau=100)  # E·τ longer than the series
    with pytest.raises(ValueError, match="differ in length"):
        ccm(x, y[:-1], E=2)
    with pytest.raises(ValueError, match="exceeds"):
        ccm(x, y, E=2, lib_sizes=[10, 10_000])
    with pytest.raises(ValueError, match="positive integer"):
        ccm(x, y, E=0)
    with pytest.raises(TypeError):
        ccm("abc", y, E=2)


def test_constant_series_and_exclusion_radius_raise(logistic):
    from icml26.topodistill import choose_E, choose_tau, cross_map_significance
    from icml26.topodistill.embedding import delay_embed

    x, y = logistic
    flat = np.full_like(x, 0.4)
    with pytest.raises(ValueError, match="constant"):
        ccm(x, flat, E=2)
    with pytest.raises(ValueError, match="constant"):
        ccm(flat, y, E=2)
    with pytest.raises(ValueError, match="constant"):
        choose_tau(flat)
    with pytest.raises(ValueError, match="constant"):
        choose_E(flat, 1)
    v, _ = delay_embed(y, 2, 1)
    with pytest.raises(ValueError, match="constant"):
        cross_map_significance(v, flat[1:], rng=np.random.default_rng(0), device="cpu")
    with pytest.raises(ValueError, match=">= 0"):
        ccm(x, y, E=2, exclusion_radius=-1)
    with pytest.raises(ValueError, match="too long"):
        ccm(x, y, E=2, exclusion_radius=x.size)
    with pytest.raises(ValueError, match=">= 0"):
        choose_E(x, 1, exclusion_radius=-2)
    # the largest admissible radius still gives every point its k neighbours: finite skill
    limit = (v.shape[0] - 3 - 1) // 2
    res = ccm(x, y, E=2, exclusion_radius=limit, lib_sizes=[v.shape[0]], samples=1)
    assert np.isfinite(res.final_skill)
