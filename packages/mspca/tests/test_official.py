"""``variant="official_sv"`` against a numpy transcription of the official ``ms_pca``.

The transcription below follows ``ms_pca`` in the authors' ``rebuttal.py`` line by
line (scikit-learn's ``TruncatedSVD(n_components=10, n_iter=7, random_state=42)`` for
both solves, ``estimate_theta_square`` with |discriminant|, ‖m'‖ = 2·sqrt(ŝ/π'), the
singular-value stability test). The only change: the knockoff's unit direction is an
argument instead of a draw from the script's global generator, so that both sides
use the same one.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from sklearn.decomposition import TruncatedSVD

from icml26.mspca import knockoff_pca, knockoff_pca_batch, paper_shift_norm, simulate
from icml26.mspca.spectrum import official_spike_strength


def estimate_theta_square(lambda_hat, c):
    nabla = np.square(c + 1 - lambda_hat) - 4 * c
    nabla_sqrt = np.sqrt(np.abs(nabla))
    linear_w = c - lambda_hat + 1
    return (-linear_w + nabla_sqrt) / 2


def official_ms_pca(X_tilde, m_unit, max_k_r=10, C=None):
    d, n = X_tilde.shape
    c = d / n
    if C is None:
        C = 1 / c
    max_k_r = min(d, max_k_r)
    svd_tilde = TruncatedSVD(n_components=max_k_r, n_iter=7, random_state=42)
    svd_tilde.fit(X_tilde.T / np.sqrt(n))
    S_tilde = svd_tilde.singular_values_
    U_tilde = svd_tilde.components_.T
    theta_square_prime = estimate_theta_square(S_tilde[0], c)
    noise_proportion_prime = 1
    gamma_prime = np.ones(n)  # np.random.binomial(1, 1, n)
    noise_norm_prime = 2 * (theta_square_prime / noise_proportion_prime) ** 0.5
    m_prime = noise_norm_prime * m_unit.reshape(d, 1)
    A_prime = m_prime * gamma_prime
    X_prime = X_tilde + A_prime
    svd_prime = TruncatedSVD(n_components=max_k_r, n_iter=7, random_state=42)
    svd_prime.fit(X_prime.T / np.sqrt(n))
    S_prime = svd_prime.singular_values_
    radius = C * n ** (-1 / 2)
    stable_indices = []
    for i in range(max_k_r):
        for j in range(max_k_r):
            if abs(S_tilde[i] - S_prime[j]) < radius:
                stable_indices.append(i)
                break
    return S_tilde, S_prime, np.array(stable_indices, dtype=int), U_tilde[:, stable_indices]


def _data(seed, d, n, frac):
    c = d / n
    s = simulate(
        jax.random.key(seed), d, n, jnp.array([2 * c**0.5]),
        jnp.array([paper_shift_norm(c, frac)]), jnp.array([frac]),
    )  # fmt: skip
    return np.asarray(s.x_tilde)


CASES = [(0, 200, 300, 0.05), (1, 200, 300, 0.20), (3, 240, 200, 0.15)]  # the last: d > n


@pytest.mark.parametrize(("seed", "d", "n", "frac"), CASES)
def test_official_sv_is_the_official_code(seed, d, n, frac):
    x = _data(seed, d, n, frac)
    res = knockoff_pca(x, jax.random.key(seed), variant="official_sv", noise_variance=1.0)
    m_unit = np.asarray(res.knockoff_directions[0])
    s_t, s_p, stable, comps = official_ms_pca(x, m_unit)
    np.testing.assert_allclose(np.sqrt(res.eigenvalues), s_t, rtol=0, atol=1e-10)
    np.testing.assert_allclose(np.sqrt(res.knockoff_eigenvalues[0]), s_p, rtol=0, atol=1e-10)
    assert np.flatnonzero(np.asarray(res.stable)).tolist() == stable.tolist()
    ours = np.asarray(res.components)[:, stable]
    np.testing.assert_allclose(np.abs(np.sum(ours * comps, axis=0)), 1.0, atol=1e-8)
    # the knockoff strength θ'² = π'‖m'‖² = 4·estimate_theta_square(s̃₁)
    assert float(res.knockoff_strength) == pytest.approx(4 * estimate_theta_square(s_t[0], d / n))


def test_official_sv_on_rescaled_data_is_the_official_code_on_unit_noise():
    x = 3.0 * _data(5, 200, 300, 0.10)
    res = knockoff_pca(x, jax.random.key(0), variant="official_sv")
    sigma = float(np.sqrt(res.noise_variance))
    assert sigma == pytest.approx(3.0, rel=0.05)
    s_t, _, stable, _ = official_ms_pca(x / sigma, np.asarray(res.knockoff_directions[0]))
    np.testing.assert_allclose(np.sqrt(res.eigenvalues), s_t, atol=1e-10)
    assert np.flatnonzero(np.asarray(res.stable)).tolist() == stable.tolist()


def test_official_sv_batch_equals_single_calls():
    xs = np.stack([_data(s, 200, 300, 0.1) for s in (6, 7)])
    keys = jax.random.split(jax.random.key(1), 2)
    batch = knockoff_pca_batch(xs, keys, variant="official_sv", noise_variance=1.0)
    for i in range(2):
        one = knockoff_pca(xs[i], keys[i], variant="official_sv", noise_variance=1.0)
        np.testing.assert_allclose(batch.eigenvalues[i], one.eigenvalues, atol=1e-10)
        assert np.array_equal(batch.stable[i], one.stable)


def test_official_strength_is_not_the_inverse_map():
    # At c = 0.9 a typical top singular value 2.436 gives ≈ 1.178 (θ'² ≈ 4.71), where
    # the inverse map g⁻¹ clipped at the bulk edge would give √c (θ'² = 3.795).
    assert float(official_spike_strength(2.436, 0.9)) == pytest.approx(
        estimate_theta_square(2.436, 0.9)
    )
    assert 4 * float(official_spike_strength(2.436, 0.9)) == pytest.approx(4.71, abs=0.01)
