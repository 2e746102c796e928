"""Tiny seeded hubs shared by the tests."""

from __future__ import annotations

import pytest

from icml26.carve import HashedNgramEncoder, HubConfig, TrainConfig, simulate_hub
from icml26.carve.candidates import CandidateSpec
from icml26.shared import numpy_rng, torch_threads

TINY = HubConfig(n_experiences=3, n_domains=8, models_per_experience=16,
                 train_per_model=8, test_per_model=3)  # fmt: skip
FAST = TrainConfig(embedding_dim=32, adapter_hidden=16, epochs=2, batch_size=32, lr_scale=30.0,
                   candidates=CandidateSpec(12, 5, 3, 3), mine_every=3)  # fmt: skip


@pytest.fixture(scope="session")
def fast_train():
    return FAST


@pytest.fixture(scope="session")
def tiny_config():
    return TINY


@pytest.fixture(scope="session", autouse=True)
def _one_thread():
    # tiny matmuls: one thread avoids contention on shared 2-core runners
    with torch_threads(1):
        yield


@pytest.fixture(scope="session")
def tiny_hub():
    return simulate_hub(TINY, numpy_rng(0, "hub"))


@pytest.fixture(scope="session")
def tiny_features(tiny_hub):
    enc = HashedNgramEncoder(256)
    xs_train = [enc.encode(e.train.texts) for e in tiny_hub.experiences]
    xs_test = [enc.encode(e.test.texts) for e in tiny_hub.experiences]
    return enc, xs_train, xs_test
