import jax
import jax.numpy as jnp
import numpy as np
import pytest

from icml26.gausscbo import LBWSpace, bw_barycenter, exp_map, lbw_barycenter, log_map


def _spd(rng, d, n=None):
    a = rng.standard_normal((n or 1, d, d))
    s = a @ np.swapaxes(a, 1, 2) + 0.3 * np.eye(d)
    return s if n else s[0]


@pytest.mark.parametrize("d", [2, 4])
def test_exp_of_log_is_identity(d):
    rng = np.random.default_rng(d)
    sigma0 = _spd(rng, d)
    for sigma in _spd(rng, d, 5):
        t = log_map(jnp.asarray(sigma), jnp.asarray(sigma0))
        np.testing.assert_allclose(t, t.T, atol=1e-12)
        np.testing.assert_allclose(exp_map(t, jnp.asarray(sigma0)), sigma, rtol=1e-9, atol=1e-9)
    # the extended map accepts any symmetric T and stays PSD
    t = rng.standard_normal((d, d)) * 3
    t = t + t.T
    assert (
        np.linalg.eigvalsh(np.asarray(exp_map(jnp.asarray(t), jnp.asarray(sigma0)))).min() > -1e-9
    )


def test_basis_is_orthonormal_and_matches_paper_for_identity():
    rng = np.random.default_rng(0)
    space = LBWSpace.create(_spd(rng, 3))
    gram = np.asarray(
        jax.vmap(lambda a: jax.vmap(lambda b: space.inner(a, b))(space.basis))(space.basis)
    )
    np.testing.assert_allclose(gram, np.eye(6), atol=1e-10)
    t = rng.standard_normal((3, 3))
    t = t + t.T
    np.testing.assert_allclose(space.matrix(space.coeffs(jnp.asarray(t))), t, atol=1e-10)
    ident = LBWSpace.create(d=2)
    c = np.asarray(ident.coeffs(jnp.asarray([[1.0, 2.0], [2.0, 3.0]])))
    np.testing.assert_allclose(c, [1.0, 3.0, 2.0 * np.sqrt(2.0)])
    assert ident.dim == 5


def test_barycenter_is_exp_of_weighted_coefficients():
    rng = np.random.default_rng(1)
    space = LBWSpace.create(_spd(rng, 2))
    z = jnp.asarray(rng.standard_normal((7, space.dim)) * 0.3)
    w = jnp.asarray(rng.dirichlet(np.ones(7)))
    m, t = space.split(z)
    m_bar, t_bar, s_bar = lbw_barycenter(m, t, w, space.sigma0)
    m_ref, s_ref = space.gaussian(w @ z)
    np.testing.assert_allclose(m_bar, m_ref, atol=1e-12)
    np.testing.assert_allclose(s_bar, s_ref, atol=1e-12)
    np.testing.assert_allclose(space.coeffs(t_bar), (w @ z)[2:], atol=1e-12)


def test_basis_noise_has_identity_covariance():
    rng = np.random.default_rng(2)
    space = LBWSpace.create(_spd(rng, 3))
    b = space.random_sym(jax.random.key(0), (40000,))  # Σ_ℓ ξ_ℓ e_ℓ
    c = np.asarray(space.coeffs(b))  # ⟨B, e_ℓ⟩_{Σ⁰}
    np.testing.assert_allclose(np.cov(c.T), np.eye(6), atol=0.04)
    # for Σ⁰ = I the law is that of (Ξ + Ξᵀ)/2: unit diagonal, off-diagonal variance 1/2
    ident = LBWSpace.create(d=3)
    bi = np.asarray(ident.random_sym(jax.random.key(1), (40000,)))
    np.testing.assert_allclose(bi[:, [0, 1, 2], [0, 1, 2]].var(0), 1.0, atol=0.04)
    np.testing.assert_allclose(bi[:, [0, 0, 1], [1, 2, 2]].var(0), 0.5, atol=0.03)


def test_lbw_barycenter_close_to_bw_near_reference_only():
    rng = np.random.default_rng(3)
    eye = jnp.eye(2)
    w = jnp.full(3, 1 / 3)
    near = jnp.asarray(np.eye(2) + 0.05 * _spd(rng, 2, 3))
    rot = [np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]]) for a in (0, 1.0, 2.0)]
    far = jnp.asarray([r @ np.diag([9.0, 0.05]) @ r.T for r in rot])
    gaps = []
    for covs in (near, far):
        ts = jax.vmap(lambda s: log_map(s, eye))(covs)
        _, _, lbw = lbw_barycenter(jnp.zeros((3, 2)), ts, w, eye)
        gaps.append(float(jnp.linalg.norm(lbw - bw_barycenter(covs, w)) / jnp.linalg.norm(lbw)))
    assert gaps[0] < 1e-3
    assert gaps[1] > 0.05


@pytest.mark.parametrize(
    "bad, match",
    [
        (np.array([[1.0, 0.0], [0.0, -1.0]]), "positive definite"),
        (np.array([[1.0, 0.5], [0.0, 1.0]]), "symmetric"),
        (np.ones((2, 3)), "square"),
        (np.array([[np.nan, 0.0], [0.0, 1.0]]), "NaN"),
    ],
)
def test_bad_reference_raises(bad, match):
    with pytest.raises(ValueError, match=match):
        LBWSpace.create(bad)
