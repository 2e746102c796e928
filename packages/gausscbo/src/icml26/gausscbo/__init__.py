"""icml26.gausscbo — Gaussian CBO in the linearized Bures–Wasserstein space.

Reference implementation of *Variational inference via Gaussian interacting particles in
the Bures–Wasserstein geometry* (Giacomo Borghi, José A. Carrillo; ICML 2026,
arXiv:2601.00632), in JAX with float64, ``lax.scan`` over steps and ``vmap`` over runs.

- :mod:`~icml26.gausscbo.lbw`: the LBW space — exp/log maps, orthonormal coefficient
  basis, LBW (and BW) barycenters.
- :mod:`~icml26.gausscbo.cbo`: :class:`GaussCBO` (Algorithm 1), consensus weights, noise.
- :mod:`~icml26.gausscbo.multiswarm`: multi-swarm CBO for Gaussian mixtures (Algorithm 2).
- :mod:`~icml26.gausscbo.objectives`: :class:`KLDivergence` with sigma-point or MC quadrature.
- :mod:`~icml26.gausscbo.baselines`: BW, Gaussian SVGD and Fisher–Rao flows; numpyro ADVI.
- :mod:`~icml26.gausscbo.data`: Gaussian-mixture targets A–D, the d = 10 generator, files.
"""

from icml26.gausscbo.baselines import (
    FLOWS,
    STEP_FACTORS,
    FlowResult,
    gaussian_flow,
    numpyro_fullrank_vi,
)
from icml26.gausscbo.cbo import (
    CBOResult,
    GaussCBO,
    anisotropic_noise,
    cbo_update,
    consensus_point,
    consensus_weights,
    isotropic_noise,
    particle_variance,
    run_keys,
)
from icml26.gausscbo.data import PAPER_TARGETS, GaussianMixture, paper_target, random_gmm
from icml26.gausscbo.lbw import LBWSpace, bw_barycenter, exp_map, lbw_barycenter, log_map
from icml26.gausscbo.multiswarm import MultiSwarmResult, mixture_kl, multi_swarm_cbo
from icml26.gausscbo.objectives import KLDivergence, sigma_points
from icml26.gausscbo.precision import float64

__all__ = [
    "FLOWS",
    "PAPER_TARGETS",
    "STEP_FACTORS",
    "CBOResult",
    "FlowResult",
    "GaussCBO",
    "GaussianMixture",
    "KLDivergence",
    "LBWSpace",
    "MultiSwarmResult",
    "anisotropic_noise",
    "bw_barycenter",
    "cbo_update",
    "consensus_point",
    "consensus_weights",
    "exp_map",
    "float64",
    "gaussian_flow",
    "isotropic_noise",
    "lbw_barycenter",
    "log_map",
    "mixture_kl",
    "multi_swarm_cbo",
    "numpyro_fullrank_vi",
    "paper_target",
    "particle_variance",
    "random_gmm",
    "run_keys",
    "sigma_points",
]

__version__ = "0.3.0"
