import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icml26.mspca import (
    bbp_threshold,
    bulk_edge,
    simulate_batch,
    spike_location,
    spike_strength,
    top_eigenpairs,
)


def test_known_values():
    c = 0.5
    assert float(bbp_threshold(c)) == pytest.approx(np.sqrt(0.5))
    assert float(bulk_edge(c)) == pytest.approx((1 + np.sqrt(0.5)) ** 2)
    # the collision example of the audit: ℓ = θ² = 3 at c = 1/2 both land at 14/3
    assert float(spike_location(3.0, c)) == pytest.approx(14 / 3)


@settings(max_examples=50, deadline=None)
@given(c=st.floats(0.05, 4.0), ratio=st.floats(1.01, 50.0))
def test_inverse_recovers_supercritical_strength(c, ratio):
    s = ratio * np.sqrt(c)
    assert float(spike_strength(spike_location(s, c), c)) == pytest.approx(s, rel=1e-9)


def test_subcritical_maps_to_the_edge_and_back_to_threshold():
    c = 0.9
    below = np.array([0.1, 0.5, np.sqrt(c)])
    assert np.allclose(spike_location(below, c), bulk_edge(c))
    assert np.allclose(spike_strength(np.array([1.0, 2.0, float(bulk_edge(c))]), c), np.sqrt(c))
    with pytest.raises(ValueError, match="positive"):
        bulk_edge(0.0)


def test_outliers_sit_at_g_of_the_spikes_at_n_2000():
    """Theorem 3.5 against simulation: covariance and mean-shift outliers, averaged over
    16 draws (one draw fluctuates by ~0.06 at n = 2000)."""
    d, n, trials = 200, 2000, 16
    c = d / n
    ell, theta2, frac = 1.0, 3.0, 0.2
    keys = jax.random.split(jax.random.key(3), trials)
    spikes, norms = jnp.array([ell]), jnp.array([np.sqrt(theta2 / frac)])
    sample = simulate_batch(keys, d, n, spikes, norms, jnp.array([frac]))
    lam = jax.vmap(lambda x: top_eigenpairs(x, 2, method="gram")[0])(sample.x_tilde).mean(0)
    assert float(lam[0]) == pytest.approx(float(spike_location(theta2, c)), abs=0.05)
    assert float(lam[1]) == pytest.approx(float(spike_location(ell, c)), abs=0.05)
    clean = jax.vmap(lambda x: top_eigenpairs(x, 1, method="gram")[0])(sample.x_clean).mean()
    assert float(clean) == pytest.approx(float(spike_location(ell, c)), abs=0.05)
