"""Velocity models: the exact Gaussian-mixture fields, the digits flow network with its
training and checkpoints, and the digits classifier used for evaluation."""

from icml26.cfgmp.models.classifier import DigitsClassifier, train_classifier
from icml26.cfgmp.models.flownet import (
    ConditionalVelocityMLP,
    FlowNetConfig,
    load_flow_model,
    save_flow_model,
    train_flow_matching,
)
from icml26.cfgmp.models.mixture import GaussianMixtureFlow, ring_mixture

__all__ = [
    "ConditionalVelocityMLP",
    "DigitsClassifier",
    "FlowNetConfig",
    "GaussianMixtureFlow",
    "load_flow_model",
    "ring_mixture",
    "save_flow_model",
    "train_classifier",
    "train_flow_matching",
]
