"""The finite-n study reads the single-knockoff method off a three-knockoff run."""

import jax
import numpy as np
import pytest

from icml26.mspca import knockoff_pca_batch, paper_shift_norm, paper_spike, simulate_batch
from icml26.mspca.finite_n import VARIANTS, FiniteN, first_knockoff_component, run_cell, wilson


@pytest.mark.parametrize("variant", ["eigenvalue", "official_sv"])
def test_first_knockoff_alone_is_the_single_knockoff_method(variant):
    d, n, trials = 27, 30, 3
    c = d / n
    sample = simulate_batch(
        jax.random.split(jax.random.key(3), trials), d, n, np.array([paper_spike(c)]),
        np.array([paper_shift_norm(c, 0.1)]), np.array([0.1]),
    )  # fmt: skip
    keys = jax.random.split(jax.random.key(4), trials)
    res = knockoff_pca_batch(sample.x_tilde, keys, k=5, variant=variant)
    np.testing.assert_array_equal(
        np.asarray(first_knockoff_component(res, variant)), np.asarray(res.principal_component)
    )


@pytest.mark.slow
def test_run_cell_reports_every_variant():
    out = run_cell(jax.random.key(0), FiniteN(trials=2, chunk=2), 40, 0.1)
    assert set(out) == set(VARIANTS)
    assert all(a.shape == (2,) and np.all((a >= 0) & (a <= 1 + 1e-12)) for a in out.values())


def test_wilson_interval_brackets_the_rate():
    lo, hi = wilson(20, 200)
    assert lo < 0.1 < hi and hi - lo < 0.1


def test_trials_per_n():
    study = FiniteN(ns=(40, 80), trials=(3, 5))
    assert (study.trials_at(40), study.trials_at(80)) == (3, 5)
    assert FiniteN(ns=(40, 80), trials=7).trials_at(80) == 7
    with pytest.raises(ValueError, match="not in the study"):
        study.trials_at(60)
    with pytest.raises(ValueError, match="one per n"):
        FiniteN(ns=(40, 80), trials=(3,))
    with pytest.raises(ValueError, match="positive ints"):
        FiniteN(ns=(40,), trials=0)
    with pytest.raises(ValueError, match="positive ints"):
        FiniteN(ns=(40, 80), trials=(3, 2.5))


def test_offset_must_be_a_multiple_of_the_chunk():
    with pytest.raises(ValueError, match="multiple of chunk"):
        run_cell(jax.random.key(0), FiniteN(trials=2, chunk=2), 40, 0.1, offset=1)
    with pytest.raises(ValueError, match="multiple of chunk"):
        run_cell(jax.random.key(0), FiniteN(trials=2, chunk=2), 40, 0.1, offset=-2)


@pytest.mark.slow
def test_offset_extends_an_earlier_run():
    key = jax.random.key(5)
    whole = run_cell(key, FiniteN(trials=4, chunk=2), 40, 0.1)
    first = run_cell(key, FiniteN(trials=2, chunk=2), 40, 0.1)
    rest = run_cell(key, FiniteN(trials=2, chunk=2), 40, 0.1, offset=2)
    for name in VARIANTS:
        np.testing.assert_array_equal(np.concatenate([first[name], rest[name]]), whole[name])
