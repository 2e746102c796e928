import jax
import jax.numpy as jnp
import numpy as np
import pytest

from icml26.gausscbo import FLOWS, GaussianMixture, KLDivergence, gaussian_flow, numpyro_fullrank_vi

MU = np.array([1.0, -0.5])
COV = np.array([[1.2, 0.4], [0.4, 0.6]])


def _kl():
    # padded to four components: shares the compiled flow with the reproduction tests
    return KLDivergence(GaussianMixture([1.0], MU[None], COV[None]), d=2, pad_to=4)


@pytest.mark.slow  # compiles every flow on the padded mixture: ~12 s of CPU
@pytest.mark.parametrize("kind", sorted(FLOWS))
def test_flows_are_stationary_at_a_gaussian_target(kind):
    dm, ds = FLOWS[kind](_kl(), jnp.asarray(MU), jnp.asarray(COV))
    np.testing.assert_allclose(dm, 0.0, atol=1e-10)
    np.testing.assert_allclose(ds, 0.0, atol=1e-10)
    dm, _ = FLOWS[kind](_kl(), jnp.zeros(2), jnp.eye(2))
    assert np.linalg.norm(dm) > 0.1


def test_bw_flow_converges_to_gaussian_target():
    res = gaussian_flow("bw", _kl(), np.zeros((8, 2)), np.eye(2), dt=0.05, steps=200)
    assert res.energy.shape == (8, 201)
    np.testing.assert_allclose(res.final_mean, np.broadcast_to(MU, (8, 2)), atol=1e-3)
    np.testing.assert_allclose(res.final_cov[0], COV, atol=1e-3)
    assert res.final_energy.max() < 1e-5
    with pytest.raises(ValueError, match="kind"):
        gaussian_flow("adam", _kl(), np.zeros(2), np.eye(2), dt=0.1, steps=2)


@pytest.mark.slow
def test_numpyro_advi_recovers_gaussian_target():
    pytest.importorskip("numpyro")
    means, covs = numpyro_fullrank_vi(
        _kl(), np.zeros((2, 2)), jax.random.key(0), steps=3000, lr=0.02
    )
    np.testing.assert_allclose(means, np.broadcast_to(MU, (2, 2)), atol=0.15)
    np.testing.assert_allclose(covs[0], COV, atol=0.2)


def test_flow_bad_input_names_the_argument():
    kl = _kl()
    with pytest.raises(ValueError, match="m0 contains NaN"):
        gaussian_flow("bw", kl, np.array([np.nan, 0.0]), np.eye(2), dt=0.05, steps=2)
    with pytest.raises(TypeError, match="m0 must be a real array"):
        gaussian_flow("bw", kl, np.zeros(2) * 1j, np.eye(2), dt=0.05, steps=2)
    with pytest.raises(ValueError, match="steps must be an integer"):
        gaussian_flow("bw", kl, np.zeros(2), np.eye(2), dt=0.05, steps=2.5)
    with pytest.raises(ValueError, match="positive definite"):
        gaussian_flow("bw", kl, np.zeros(2), -np.eye(2), dt=0.05, steps=2)
