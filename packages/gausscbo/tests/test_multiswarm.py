import jax
import jax.numpy as jnp
import numpy as np
import pytest

from icml26.gausscbo import KLDivergence, mixture_kl, multi_swarm_cbo, paper_target


def test_mixture_kl_is_zero_at_the_target_and_positive_elsewhere():
    # A has equal weights: the equal-weight mixture of its own components is exact
    a = paper_target("A")
    kl = KLDivergence(a, d=2)
    means, covs = jnp.asarray(a.means), jnp.asarray(a.covs)
    assert float(mixture_kl(kl, means, covs)) == pytest.approx(0, abs=1e-12)
    assert float(mixture_kl(kl, means + 0.5, covs)) > 0.01
    assert float(mixture_kl(kl, jnp.zeros_like(means), jnp.zeros_like(covs))) == 1e4


@pytest.mark.slow
def test_multi_swarm_runs():
    kl = KLDivergence(paper_target("A"), d=2)
    starts = np.random.default_rng(0).uniform(-3, 3, (2, 2, 2))
    res = multi_swarm_cbo(kl, jax.random.key(0), starts, n_swarms=2, n_particles=5, steps=30)
    assert res.energy.shape == (2, 31) and res.means.shape == (2, 31, 2, 2)
    assert np.all(np.isfinite(res.energy))
    with pytest.raises(ValueError, match="m0 must have shape"):
        multi_swarm_cbo(kl, jax.random.key(0), starts[:, :1], n_swarms=2)


def test_multi_swarm_rejects_bad_starts():
    kl = KLDivergence(paper_target("A"), d=2)
    bad = np.zeros((1, 2, 2))
    bad[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        multi_swarm_cbo(kl, jax.random.key(0), bad, n_swarms=2)
    with pytest.raises(ValueError, match="steps must be a positive integer"):
        multi_swarm_cbo(kl, jax.random.key(0), np.zeros((1, 2, 2)), n_swarms=2, steps=1.5)
