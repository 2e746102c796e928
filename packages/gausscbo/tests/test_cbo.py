import jax
import jax.numpy as jnp
import numpy as np
import pytest

from icml26.gausscbo import (
    GaussCBO,
    KLDivergence,
    consensus_point,
    consensus_weights,
    paper_target,
    particle_variance,
)

TARGET_M = np.array([0.5, -1.0])
TARGET_S = np.array([[1.5, 0.3], [0.3, 0.7]])


def quadratic(m, sigma):
    """A smooth energy minimised at N(TARGET_M, TARGET_S)."""
    return jnp.sum((m - TARGET_M) ** 2) + jnp.sum((sigma - TARGET_S) ** 2)


def test_weights_stay_finite_at_alpha_1e4():
    e = jnp.array([3.0, 3.0 + 1e-5, 50.0, 1e3, jnp.nan])
    w = np.asarray(consensus_weights(e, 1e4))
    assert np.all(np.isfinite(w)) and w.sum() == pytest.approx(1.0)
    assert w[-1] == 0.0 and w[0] > w[1] > 0.0
    naive = np.exp(-1e4 * np.asarray(e[:4]))
    assert naive.sum() == 0.0  # the naive formula would give 0/0
    np.testing.assert_allclose(consensus_point(jnp.eye(5), e, 1e4), w, atol=1e-15)  # z̄ = Σ ω_i z_i


def test_step_is_standard_anisotropic_cbo_in_coefficients():
    cbo = GaussCBO(KLDivergence(paper_target("A"), d=2), d=2, sigma=5.0, dt=0.05, alpha=30.0)
    z = cbo.init(jax.random.key(0), np.array([1.0, 2.0]), np.eye(2))
    assert z.shape == (20, 5)
    key = jax.random.key(7)
    z_new, z_bar = cbo.step(z, key)
    # by hand in R^D, D = d + d(d+1)/2: Euclidean anisotropic CBO (Carrillo et al. 2021)
    zn = np.asarray(z)
    e = np.asarray(cbo.energies(z))
    w = np.exp(-30.0 * (e - e.min()))
    w /= w.sum()
    bar = w @ zn
    xi = np.asarray(jax.random.normal(key, zn.shape, jnp.float32), dtype=np.float64)
    expected = zn + 0.05 * (bar - zn) + np.sqrt(0.05) * 5.0 * (bar - zn) * xi
    np.testing.assert_allclose(z_bar, bar, rtol=1e-12)
    np.testing.assert_allclose(z_new, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.slow  # 200 steps of 40 runs in both libraries: about 20 s of CPU
def test_statistics_agree_with_cbx_and_consensus_forms():
    cbx = pytest.importorskip("cbx")
    runs, steps = 40, 200
    cbo = GaussCBO(quadratic, d=2, n_particles=20, alpha=20.0, sigma=0.7, dt=0.02)
    starts = np.random.default_rng(0).uniform(-2, 2, (runs, 2))
    ours = cbo.run(jax.random.key(0), starts, np.eye(2), steps)
    # cbx (numpy) on the same LBW-coefficient objective, from our initial particles
    energies = jax.jit(jax.vmap(jax.vmap(lambda z: quadratic(*cbo.space.gaussian(z)))))
    with jax.enable_x64(True):
        x0 = np.stack([np.asarray(cbo.init(jax.random.key(100 + r), starts[r], np.eye(2)))
                       for r in range(runs)])  # fmt: skip
        dyn = cbx.dynamics.CBO(
            lambda x: np.asarray(energies(jnp.asarray(x))), f_dim="3D", x=x0.copy(),
            dt=0.02, sigma=0.7, alpha=20.0, lamda=1.0, noise="anisotropic",
            max_it=steps, verbosity=0, seed=0,
        )  # fmt: skip
        dyn.optimize()
        xf = jnp.asarray(dyn.x)
        bar = consensus_point(xf, energies(xf), 20.0)
        cbx_energy = np.asarray(jax.vmap(lambda z: quadratic(*cbo.space.gaussian(z)))(bar))
        cbx_ratio = np.asarray(particle_variance(xf) / particle_variance(jnp.asarray(x0)))
    for a, b in ((ours.final_energy, cbx_energy),
                 (np.log(ours.variance_ratio), np.log(cbx_ratio))):  # fmt: skip
        se = np.sqrt(a.var() / a.size + b.var() / b.size)
        assert abs(a.mean() - b.mean()) < 4 * se + 1e-6
    # σ² < 2λ (the regime of Theorem 3.5): the ensemble collapses to consensus
    assert np.mean(ours.variance_ratio < 0.05) >= 0.9


@pytest.mark.slow
def test_run_records_and_variants():
    kl = KLDivergence(paper_target("D"), d=2)
    iso = GaussCBO(kl, d=2, n_particles=6, noise="isotropic", base_update_every=5)
    res = iso.run(jax.random.key(1), np.zeros(2), np.eye(2), 10, runs=3, record_every=2)
    assert res.energy.shape == (3, 6) and res.cov.shape == (3, 6, 2, 2)
    assert np.all(np.isfinite(res.energy)) and np.all(np.isfinite(res.variance_ratio))
    np.testing.assert_allclose(res.times, np.arange(6) * 0.1)
    again = iso.run(jax.random.key(1), np.zeros(2), np.eye(2), 10, runs=3, record_every=2)
    np.testing.assert_array_equal(res.energy, again.energy)  # same key, same numbers


def test_bad_input_raises():
    kl = KLDivergence(paper_target("A"), d=2)
    cbo = GaussCBO(kl, d=2)
    key = jax.random.key(0)
    with pytest.raises(ValueError, match="m0 must have shape"):
        cbo.run(key, np.zeros(3), np.eye(2), 5)
    with pytest.raises(ValueError, match="positive definite"):
        cbo.run(key, np.zeros(2), np.array([[1.0, 0.0], [0.0, -1.0]]), 5)
    with pytest.raises(ValueError, match="positive definite"):
        GaussCBO(kl, d=2, sigma0=np.zeros((2, 2)))
    with pytest.raises(TypeError, match="PRNG key"):
        cbo.run(0, np.zeros(2), np.eye(2), 5)
    with pytest.raises(ValueError, match="not finite"):
        GaussCBO(KLDivergence(lambda x: jnp.log(x[0]), d=2), d=2).run(
            key, np.zeros(2), np.eye(2), 5
        )
    with pytest.raises(ValueError, match="noise"):
        GaussCBO(kl, d=2, noise="pink")
    with pytest.raises(ValueError, match="alpha"):
        GaussCBO(kl, d=2, alpha=0.0)


def test_inputs_that_used_to_pass_silently_raise():
    kl = KLDivergence(paper_target("A"), d=2)
    cbo = GaussCBO(kl, d=2, n_particles=4)
    key = jax.random.key(0)
    with pytest.raises(ValueError, match="runs=3 disagrees with the 4 starts"):
        cbo.run(key, np.zeros((4, 2)), np.eye(2), 5, runs=3)
    with pytest.raises(ValueError, match="steps must be a positive integer"):
        cbo.run(key, np.zeros(2), np.eye(2), 2.5)
    with pytest.raises(TypeError, match="real-valued"):
        cbo.run(key, np.zeros(2) + 1j, np.eye(2), 5)
    with pytest.raises(ValueError, match="NaN"):
        cbo.run(key, np.array([np.nan, 0.0]), np.eye(2), 5)
    with pytest.raises(ValueError, match="particles must have shape"):
        cbo.run(key, np.zeros(2), np.eye(2), 5, particles=np.zeros((4, 3)))


def test_given_particles_are_the_start():
    kl = KLDivergence(paper_target("A"), d=2)
    cbo = GaussCBO(kl, d=2, n_particles=4)
    z0 = np.zeros((2, 4, 5))
    z0[:, :, 0] = np.array([0.0, 1.0, 2.0, 3.0])  # spread in m1 only
    res = cbo.run(jax.random.key(0), np.zeros(2), np.eye(2), 3, runs=2, particles=z0)
    # recorded variance at step 0 is that of the given particles: var of (0, 1, 2, 3)
    np.testing.assert_allclose(res.variance[:, 0], 1.25, rtol=1e-12)
    assert res.distance.shape == (2, 4) and np.all(res.distance[:, 0] > 0)
