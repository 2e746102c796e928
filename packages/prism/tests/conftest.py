"""Shared tiny fixtures: a seeded simulated world and small untrained/trained models."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from icml26.prism.data import SimConfig, Simulation
from icml26.prism.model import ModelConfig, build_model

# The tiny models gain nothing from intra-op threads, and on a loaded machine OpenMP's
# busy-waiting makes two threads an order of magnitude slower than one.
torch.set_num_threads(1)

TINY = ModelConfig.tiny(d_model=32, d_ff=64, n_layers=1, n_heads=2)


@pytest.fixture(scope="session")
def world():
    """A small simulated world and a repertoire of 300 heavy chains."""
    sim = Simulation.create(SimConfig(n_germlines=4, generations=8), np.random.default_rng(0))
    rep = sim.repertoire(np.random.default_rng(1), 60, 5)
    return sim, rep


def _make_model(kind: str = "prism", seed: int = 0, **overrides):
    torch.manual_seed(seed)
    model = build_model(TINY.replace(kind=kind, **overrides)).eval()
    # random, non-trivial head weights so that every channel differs
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    return model


@pytest.fixture
def make_model():
    """Factory of small seeded models with perturbed weights: ``make_model("prism", ...)``."""
    return _make_model


@pytest.fixture
def tiny_config():
    return TINY
