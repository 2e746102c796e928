import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from icml26.gausscbo import GaussianMixture, KLDivergence, paper_target, random_gmm


def _gaussian_kl(m, s, mu, c):
    d = len(m)
    ci = np.linalg.inv(c)
    return 0.5 * (
        np.trace(ci @ s)
        + (mu - m) @ ci @ (mu - m)
        - d
        + np.log(np.linalg.det(c) / np.linalg.det(s))
    )


def test_sigma_point_kl_is_exact_for_quadratic_potential():
    rng = np.random.default_rng(0)
    d = 3
    a = rng.standard_normal((d, d))
    c = a @ a.T + np.eye(d)
    mu = rng.standard_normal(d)
    kl = KLDivergence(GaussianMixture([1.0], mu[None], c[None]), d=d)
    for _ in range(4):
        b = rng.standard_normal((d, d))
        s = b @ b.T + 0.2 * np.eye(d)
        m = rng.standard_normal(d)
        assert float(kl(jnp.asarray(m), jnp.asarray(s))) == pytest.approx(
            _gaussian_kl(m, s, mu, c), rel=1e-10, abs=1e-10
        )


def test_sigma_point_rule_matches_the_fourth_moment_only_at_kappa_one():
    """E x₁⁴ under N(m, Σ) = m⁴ + 6m²s + 3s² (s = Σ₁₁): the κ = 1 rule of d = 2 has
    d + κ = 3 and matches the Gaussian kurtosis; other κ do not (so κ is tested)."""
    m, s = 0.7, 1.3
    exact = m**4 + 6 * m**2 * s + 3 * s**2
    mean, cov = jnp.array([m, -0.2]), jnp.array([[s, 0.0], [0.0, 0.5]])
    got = {}
    for kappa in (0.0, 1.0, 2.0):
        kl = KLDivergence(lambda x: -(x[0] ** 4), d=2, kappa=kappa)  # V = x₁⁴
        entropy = 0.5 * (np.log(np.linalg.det(cov)) + 2 * (1 + np.log(2 * np.pi)))
        got[kappa] = float(kl(mean, cov)) + entropy  # E V
    assert got[1.0] == pytest.approx(exact, rel=1e-12)
    assert abs(got[0.0] - exact) > 0.5 and abs(got[2.0] - exact) > 0.5
    with pytest.raises(ValueError, match="kappa"):
        KLDivergence(paper_target("A"), d=2, kappa=-0.5)  # negative centre weight


def test_singular_covariance_gets_penalty_and_mc_agrees():
    kl = KLDivergence(paper_target("A"), d=2)
    m = jnp.zeros(2)
    assert float(kl(m, jnp.array([[1.0, 1.0], [1.0, 1.0]]))) == 1e4
    assert float(kl(m, jnp.zeros((2, 2)))) == 1e4
    target = GaussianMixture([1.0], [[0.5, -0.5]], [np.diag([2.0, 0.5])])
    exact = KLDivergence(target, d=2)
    mc = KLDivergence(target, d=2, quadrature="mc", n_samples=20000, seed=1)
    s = jnp.array([[1.0, 0.3], [0.3, 0.8]])
    assert float(mc(m, s)) == pytest.approx(float(exact(m, s)), abs=0.03)


def test_targets_and_generator():
    a = paper_target("a")
    assert a.k == 2 and a.d == 2
    # the mixture density integrates to one (grid quadrature)
    g = np.linspace(-9, 9, 301)
    xx, yy = np.meshgrid(g, g)
    dens = np.exp(np.asarray(a.log_density(jnp.asarray(np.stack([xx, yy], -1)))))
    assert dens.sum() * (g[1] - g[0]) ** 2 == pytest.approx(1.0, abs=1e-4)
    gmm = random_gmm(np.random.default_rng(0), d=10, k=5)
    np.testing.assert_allclose(np.linalg.norm(gmm.means, axis=1), 3 * np.sqrt(10))
    eig = np.linalg.eigvalsh(gmm.covs)
    assert eig.min() >= 0.4 - 1e-9 and eig.max() <= 2.0 + 1e-9
    assert gmm.weights.sum() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="unknown target"):
        paper_target("E")


def test_target_files_roundtrip(tmp_path):
    d = paper_target("C")
    for suffix in (".json", ".npz"):
        back = GaussianMixture.load(d.save(tmp_path / f"c{suffix}"))
        np.testing.assert_allclose(back.covs, d.covs)
        np.testing.assert_allclose(back.weights, d.weights)
    (tmp_path / "bad.json").write_text(json.dumps({"weights": [1.0], "means": [[0.0, 0.0]]}))
    with pytest.raises(ValueError, match="missing"):
        GaussianMixture.load(tmp_path / "bad.json")
    with pytest.raises(ValueError, match="positive definite"):
        GaussianMixture([1.0], [[0.0, 0.0]], [[[1.0, 0.0], [0.0, -1.0]]])


def test_bad_objective_input_raises():
    with pytest.raises(TypeError, match="GaussianMixture or a callable"):
        KLDivergence("A", d=2)
    with pytest.raises(ValueError, match="2-dimensional"):
        KLDivergence(paper_target("A"), d=3)
    kl = KLDivergence(lambda x: jnp.where(x[0] > 1.0, jnp.nan, -0.5 * x @ x), d=2)
    with pytest.raises(ValueError, match="not finite"):
        kl.check(jnp.zeros(2), jnp.eye(2))
    assert float(kl(jnp.zeros(2), jnp.eye(2))) == 1e4  # traced: mapped to the penalty
    with pytest.raises(ValueError, match="shape"):
        KLDivergence(lambda x: x, d=2).check(jnp.zeros(2), jnp.eye(2))
    assert jax.tree.leaves(KLDivergence(paper_target("A"), d=2))  # a pytree with array leaves
