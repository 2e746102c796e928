"""The classifier of the official code and its checkpoints."""

from __future__ import annotations

import pytest
import torch

from icml26.gnn_watermark import ModelConfig, build_model, load_model, save_model
from icml26.gnn_watermark.model import ARCHITECTURES


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_every_architecture_returns_log_probabilities(arch, tiny_graph):
    model = build_model(
        80, 4, ModelConfig(arch=arch, hidden=16, num_layers=2, heads_first=4), device="cpu"
    )
    model.eval()
    out = model(tiny_graph.x, tiny_graph.edge_index)
    assert out.shape == (400, 4)
    torch.testing.assert_close(out.exp().sum(-1), torch.ones(400))


def test_checkpoint_round_trip(tmp_path, tiny_graph):
    model = build_model(
        80, 4, ModelConfig(arch="SAGE", hidden=16, num_layers=3), seed=1, device="cpu"
    )
    model.eval()
    back = load_model(save_model(model, tmp_path / "m.safetensors"), device="cpu")
    back.eval()
    torch.testing.assert_close(
        back(tiny_graph.x, tiny_graph.edge_index), model(tiny_graph.x, tiny_graph.edge_index)
    )
    (tmp_path / "m.safetensors.json").write_text("{not json")
    with pytest.raises(ValueError, match="not a model description"):
        load_model(tmp_path / "m.safetensors")


def test_bad_model_configs():
    with pytest.raises(ValueError, match="arch"):
        ModelConfig(arch="MLP")
    with pytest.raises(ValueError, match="divisible"):
        ModelConfig(arch="GAT", hidden=30, heads_first=8)
