"""The negative-binomial likelihood of counts (official ``distributions.py``,
``stochastic_layers.NegativeBinomialTransformerLayer``).

scVI parameterisation: mean ``mu`` and inverse dispersion ``theta``,

    log NB(x | mu, theta) = theta (log theta - log(theta + mu)) + x (log mu - log(theta + mu))
                            + lgamma(x + theta) - lgamma(theta) - lgamma(x + 1),

i.e. scipy's ``nbinom(n=theta, p=theta / (theta + mu))``. Var = mu + mu² / theta.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn


def nb_log_prob(
    x: torch.Tensor, mu: torch.Tensor, theta: torch.Tensor, eps: float = 1e-8
) -> torch.Tensor:
    """Element-wise log NB(x | mu, theta) (``log_nb_positive`` of the official code)."""
    log_theta_mu_eps = torch.log(theta + mu + eps)
    return (
        theta * (torch.log(theta + eps) - log_theta_mu_eps)
        + x * (torch.log(mu + eps) - log_theta_mu_eps)
        + torch.lgamma(x + theta)
        - torch.lgamma(theta)
        - torch.lgamma(x + 1)
    )


class NegativeBinomialHead(nn.Module):
    """Per-gene NB parameters from decoder outputs (``shared_theta=True`` variant).

    ``logit_g = Linear(E → 1)(h_g)``; ``mu = softmax_g(logit) · library``;
    ``theta_g = exp(theta_embedding[g])`` with the embedding initialised at 1.
    The softmax couples the genes: decode the full gene panel to get the cell's means.
    """

    def __init__(self, n_genes: int, n_embed: int):
        super().__init__()
        self.params = nn.Linear(n_embed, 1, bias=True)
        self.theta = nn.Embedding(n_genes + 1, 1)  # row 0 is the padding/mask token
        nn.init.ones_(self.theta.weight)

    def forward(
        self, h: torch.Tensor, genes: torch.Tensor, library_size: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``h`` (B, G, E), ``genes`` (G,) or (B, G) ids, ``library_size`` (B, 1) -> mu, theta."""
        logits = self.params(h).squeeze(-1)
        mu = torch.softmax(logits, dim=-1) * library_size
        theta = torch.exp(self.theta(genes).squeeze(-1))
        return mu, theta.expand_as(mu)


def sample_negative_binomial(
    mu: np.ndarray, theta: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Gamma–Poisson draws: ``x ~ Poisson(Gamma(shape=theta, scale=mu/theta))``."""
    mu = np.asarray(mu, dtype=np.float64)
    theta = np.broadcast_to(np.asarray(theta, dtype=np.float64), mu.shape)
    rate = rng.gamma(shape=theta, scale=np.maximum(mu, 1e-12) / theta)
    return rng.poisson(rate).astype(np.float32)
