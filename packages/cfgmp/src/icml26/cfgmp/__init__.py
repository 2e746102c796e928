"""icml26.cfgmp — CFG-MP and CFG-MP+ for flow-matching models.

Reference implementation of *Improving Classifier-Free Guidance of Flow Matching via
Manifold Projection* (Jian-Feng Cai, Haixia Liu, Zhengyi Su, Chao Wang; ICML 2026;
arXiv 2601.21892; official code: github.com/LeonSuZhengYi/CFG-MP).

Before each classifier-free-guidance step in the noisy part of the trajectory, the
latent is projected towards the set where the conditional and unconditional
predictions agree, by a fixed-point (incremental gradient) iteration (CFG-MP) or
its Anderson-accelerated version (CFG-MP+).

    >>> import torch
    >>> from icml26.cfgmp import cfg_mp_plus, ring_mixture, sample
    >>> flow = ring_mixture(8)                     # exact velocities, no training
    >>> labels = torch.arange(8).repeat(4)
    >>> noise = torch.randn(32, 2, dtype=torch.float64)
    >>> out = sample(flow, noise, labels, cfg_mp_plus(4.0), steps=10)
    >>> out.nfe                                     # 2 per CFG step + 2K per corrected step
    44
"""

from icml26.cfgmp.anderson import anderson_mix, anderson_weights
from icml26.cfgmp.baselines import APG, CFG, CFGZeroStar, GuidanceInterval
from icml26.cfgmp.conventions import (
    FlowFromNoise,
    FlowFromSigma,
    FlowFromVPEpsilon,
    NoiseFromFlow,
    SigmaFromFlow,
    VelocityModel,
    VPEpsilonFromFlow,
)
from icml26.cfgmp.guidance import (
    Guider,
    apg,
    cfg,
    cfg_mp,
    cfg_mp_plus,
    cfg_zero_star,
    guidance_interval,
)
from icml26.cfgmp.models import (
    ConditionalVelocityMLP,
    DigitsClassifier,
    FlowNetConfig,
    GaussianMixtureFlow,
    load_flow_model,
    ring_mixture,
    save_flow_model,
    train_classifier,
    train_flow_matching,
)
from icml26.cfgmp.nfe import Evaluator
from icml26.cfgmp.projection import ManifoldProjection, ProjectionTrace
from icml26.cfgmp.sampler import SampleResult, sample, uniform_times

__all__ = [
    "APG",
    "CFG",
    "CFGZeroStar",
    "ConditionalVelocityMLP",
    "DigitsClassifier",
    "Evaluator",
    "FlowFromNoise",
    "FlowFromSigma",
    "FlowFromVPEpsilon",
    "FlowNetConfig",
    "GaussianMixtureFlow",
    "GuidanceInterval",
    "Guider",
    "ManifoldProjection",
    "NoiseFromFlow",
    "ProjectionTrace",
    "SampleResult",
    "SigmaFromFlow",
    "VPEpsilonFromFlow",
    "VelocityModel",
    "anderson_mix",
    "anderson_weights",
    "apg",
    "cfg",
    "cfg_mp",
    "cfg_mp_plus",
    "cfg_zero_star",
    "guidance_interval",
    "load_flow_model",
    "ring_mixture",
    "sample",
    "save_flow_model",
    "train_classifier",
    "train_flow_matching",
    "uniform_times",
]

__version__ = "0.1.0"
