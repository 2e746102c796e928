"""Tiny seeded graphs and models shared by the tests."""

from __future__ import annotations

import pytest

from icml26.gnn_watermark import ModelConfig, TrainConfig, generate_key, sbm_bow
from icml26.shared import torch_threads


@pytest.fixture(autouse=True, scope="session")
def _one_thread():
    # tiny sparse graphs: extra threads only add contention on a busy 2-core machine
    with torch_threads(1):
        yield


@pytest.fixture(scope="session")
def tiny_graph():
    return sbm_bow(
        400, 4, 80, p_in=0.04, p_out=0.002, topic_features=12, common_features=10, seed=3
    )


@pytest.fixture(scope="session")
def tiny_key(tiny_graph):
    return generate_key(tiny_graph, num_subgraphs=4, subgraph_size=16, watermark_size=12, seed=5)


@pytest.fixture(scope="session")
def tiny_model_config():
    return ModelConfig(arch="GCN", hidden=32, num_layers=2, dropout=0.0)


@pytest.fixture(scope="session")
def tiny_train_config():
    return TrainConfig(lr=1e-2, epochs=60, coef_wmk=50.0, epsilon=0.05, pcgrad=True)


@pytest.fixture(scope="session")
def trained(tiny_graph, tiny_key, tiny_model_config, tiny_train_config):
    """A clean and a watermarked tiny classifier (same initialisation)."""
    from icml26.gnn_watermark import train_clean, train_watermarked

    clean = train_clean(tiny_graph, tiny_model_config, tiny_train_config, seed=0, device="cpu")
    wm = train_watermarked(
        tiny_graph, tiny_key, tiny_model_config, tiny_train_config, seed=0, device="cpu"
    )
    return clean.model, wm
