import jax
import jax.numpy as jnp
import numpy as np
import pytest

from icml26.mspca import BASELINES, simulate, top_eigenpairs
from icml26.mspca.baselines import l1_pca

D, N = 40, 300


@pytest.fixture(scope="module")
def clean():
    """Clean data with one strong spike: every estimator should find it."""
    s = simulate(jax.random.key(1), D, N, jnp.array([8.0]), jnp.array([0.0]), jnp.array([0.1]))
    ref = np.asarray(top_eigenpairs(s.x_clean, 1, method="gram")[1][:, 0])
    return np.asarray(s.x_tilde), ref


SLOW = {"Huber", "PCP"}  # tens of seconds each on 2 shared cores


@pytest.mark.parametrize(
    "name", [pytest.param(b, marks=pytest.mark.slow) if b in SLOW else b for b in sorted(BASELINES)]
)
def test_each_baseline_recovers_the_spike_on_clean_data(name, clean):
    x, ref = clean
    u = BASELINES[name].fit(x, seed=0)
    assert u.shape == (D,)
    assert np.linalg.norm(u) == pytest.approx(1.0)
    assert abs(u @ ref) > 0.9


def test_centered_pca_is_fooled_by_a_mean_shift():
    s = simulate(jax.random.key(2), 200, 300, jnp.array([2.0]), jnp.array([6.0]), jnp.array([0.2]))
    ref = np.asarray(top_eigenpairs(s.x_clean, 1, method="gram")[1][:, 0])
    shift = np.asarray(s.shift_directions[:, 0])
    u = BASELINES["centered PCA"].fit(np.asarray(s.x_tilde))
    assert abs(u @ shift) > 0.8 and abs(u @ ref) < 0.3


def test_l1_pca_reaches_the_exhaustive_optimum_on_tiny_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 9))
    signs = np.array(np.meshgrid(*[[-1.0, 1.0]] * 9)).reshape(9, -1).T
    best = signs[np.argmax(np.linalg.norm(signs @ x.T, axis=1))]
    q = l1_pca(x, n_init=5)
    expected = x @ best / np.linalg.norm(x @ best)
    assert abs(q @ expected) == pytest.approx(1.0, abs=1e-9)


def test_baselines_reject_bad_input():
    with pytest.raises(ValueError, match="NaN"):
        BASELINES["spherical PCA"].fit(np.full((3, 4), np.nan))
    with pytest.raises(ValueError, match="limit"):
        BASELINES["winsorized PCA"].fit(np.ones((3, 4)), limit=0.7)
