"""The negative-binomial likelihood matches scipy; the sampler has the NB moments."""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from icml26.scldm import NegativeBinomialHead, nb_log_prob, sample_negative_binomial


@settings(max_examples=40, deadline=None)
@given(
    x=st.integers(0, 500),
    mu=st.floats(0.01, 300.0),
    theta=st.floats(0.05, 50.0),
)
def test_nb_log_prob_matches_scipy(x, mu, theta):
    ours = nb_log_prob(
        torch.tensor(float(x), dtype=torch.float64),
        torch.tensor(mu, dtype=torch.float64),
        torch.tensor(theta, dtype=torch.float64),
        eps=0.0,
    ).item()
    ref = stats.nbinom.logpmf(x, n=theta, p=theta / (theta + mu))
    assert np.isclose(ours, ref, rtol=1e-8, atol=1e-8)


def test_nb_log_prob_with_eps_is_close_to_scipy_in_float32():
    x = torch.tensor([0.0, 1.0, 7.0, 40.0])
    mu = torch.tensor([0.5, 2.0, 6.0, 35.0])
    theta = torch.tensor([1.0, 0.3, 5.0, 2.7])
    ref = stats.nbinom.logpmf(x.numpy(), n=theta.numpy(), p=(theta / (theta + mu)).numpy())
    np.testing.assert_allclose(nb_log_prob(x, mu, theta).numpy(), ref, rtol=1e-5, atol=1e-5)


def test_sampler_has_nb_mean_and_variance():
    rng = np.random.default_rng(0)
    mu, theta = np.full(200_000, 8.0), np.full(200_000, 2.0)
    x = sample_negative_binomial(mu, theta, rng)
    assert np.all(x == np.round(x)) and x.min() >= 0
    assert abs(x.mean() - 8.0) < 0.1
    assert abs(x.var() - (8.0 + 64.0 / 2.0)) < 1.0


def test_head_scales_means_by_library_and_starts_at_theta_e():
    torch.manual_seed(0)
    head = NegativeBinomialHead(n_genes=5, n_embed=4)
    mu, theta = head(
        torch.randn(3, 5, 4), torch.arange(1, 6), torch.tensor([[10.0], [100.0], [1.0]])
    )
    torch.testing.assert_close(mu.sum(1), torch.tensor([10.0, 100.0, 1.0]))
    torch.testing.assert_close(theta, torch.full((3, 5), float(np.e)))
