"""icml26.dpfeature — private learning from the feature perspective.

Reference implementation (reconstructed: the paper's full text and code are not
available) of *Understanding Private Learning From Feature Perspective* (Meng Ding,
Mingxi Lei, Shaopeng Fu, Shaowei Wang, Di Wang, Jinhui Xu; ICML 2026, arXiv:2511.18006),
a laboratory for its theorems: a two-layer polynomial-ReLU CNN on multi-patch data
(Cao et al. 2022) trained by full-batch GD, NoisyGD and clipped DP-GD, with the signal
coefficients γ and memorisation coefficients ρ tracked and the privacy spent accounted.

- :mod:`~icml26.dpfeature.data`: the multi-patch model, the digits analogue (raw and
  ScatterNet), CIFAR-10's binary release, a ``Dataset``.
- :mod:`~icml26.dpfeature.model`: the CNN (functional and as an ``nn.Module``).
- :mod:`~icml26.dpfeature.persample`: per-example gradients (closed form and ``vmap(grad)``).
- :mod:`~icml26.dpfeature.train`: GD, NoisyGD (non-formal) and DP-GD, batched over runs.
- :mod:`~icml26.dpfeature.dynamics`: the weight decomposition into γ and ρ.
- :mod:`~icml26.dpfeature.accounting`: exact and zCDP/RDP closed forms, library cross-checks.
- :mod:`~icml26.dpfeature.baselines`: the class-mean linear learner, private and not.
"""

from icml26.dpfeature.accounting import (
    gaussian_delta,
    gaussian_epsilon,
    library_epsilons,
    noise_multiplier,
    opacus_noise_multiplier,
    rdp_epsilon,
    zcdp_epsilon,
    zcdp_rho,
)
from icml26.dpfeature.data import (
    MultiPatch,
    PatchDataset,
    digits_patches,
    load_cifar10_binary,
    make_multipatch,
    mu_norm_for_snr,
    snr,
    stack,
    write_cifar10_binary,
)
from icml26.dpfeature.dynamics import Decomposer, Decomposition, decompose
from icml26.dpfeature.model import TwoLayerCNN, forward, init_weights, logistic_loss
from icml26.dpfeature.persample import (
    clipped_mean_gradient,
    loss_coefficients,
    mean_gradient,
    per_sample_gradients,
    per_sample_gradients_vmap,
    per_sample_norms,
)
from icml26.dpfeature.train import METHODS, TrainConfig, TrainResult, evaluate, train

__all__ = [
    "METHODS",
    "Decomposer",
    "Decomposition",
    "MultiPatch",
    "PatchDataset",
    "TrainConfig",
    "TrainResult",
    "TwoLayerCNN",
    "clipped_mean_gradient",
    "decompose",
    "digits_patches",
    "evaluate",
    "forward",
    "gaussian_delta",
    "gaussian_epsilon",
    "init_weights",
    "library_epsilons",
    "load_cifar10_binary",
    "logistic_loss",
    "loss_coefficients",
    "make_multipatch",
    "mean_gradient",
    "mu_norm_for_snr",
    "noise_multiplier",
    "opacus_noise_multiplier",
    "per_sample_gradients",
    "per_sample_gradients_vmap",
    "per_sample_norms",
    "rdp_epsilon",
    "snr",
    "stack",
    "train",
    "write_cifar10_binary",
    "zcdp_epsilon",
    "zcdp_rho",
]

__version__ = "0.1.1"
