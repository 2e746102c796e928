"""Loaders for save_pretrained and PEFT adapter folders; pickled checkpoints are refused."""

import json

import pytest
import torch
from safetensors.torch import save_file

from icml26.samerging import LoraAdapter
from icml26.samerging.io import (
    load_peft_adapter,
    load_state_dict,
    save_peft_adapter,
    save_state_dict,
)


def test_save_pretrained_layouts(tmp_path):
    state = {"layer.weight": torch.randn(3, 2), "layer.bias": torch.zeros(3)}
    save_state_dict(state, tmp_path / "single")
    loaded = load_state_dict(tmp_path / "single")
    torch.testing.assert_close(loaded, state)
    # a sharded folder, as transformers writes it
    shard = tmp_path / "sharded"
    shard.mkdir()
    save_file({"layer.weight": state["layer.weight"]}, shard / "model-00001-of-00002.safetensors")
    save_file({"layer.bias": state["layer.bias"]}, shard / "model-00002-of-00002.safetensors")
    index = {"weight_map": {"layer.weight": "model-00001-of-00002.safetensors",
                            "layer.bias": "model-00002-of-00002.safetensors"}}  # fmt: skip
    (shard / "model.safetensors.index.json").write_text(json.dumps(index))
    torch.testing.assert_close(load_state_dict(shard), state)


def test_pickled_checkpoints_are_refused(tmp_path):
    (tmp_path / "pytorch_model.bin").write_bytes(b"\x80\x04not really")
    with pytest.raises(ValueError, match="pickled"):
        load_state_dict(tmp_path)
    with pytest.raises(ValueError, match="pickled"):
        load_state_dict(tmp_path / "pytorch_model.bin")
    ad = tmp_path / "adapter"
    ad.mkdir()
    (ad / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "r": 2}))
    (ad / "adapter_model.bin").write_bytes(b"\x80\x04")
    with pytest.raises(ValueError, match="pickled"):
        load_peft_adapter(ad)


def test_peft_adapter_folder_round_trip_with_pruned_ranks(tmp_path):
    g = torch.Generator().manual_seed(0)
    a = {"q.weight": torch.randn(4, 6, generator=g), "v.weight": torch.randn(4, 6, generator=g)}
    b = {"q.weight": torch.randn(5, 4, generator=g), "v.weight": torch.randn(5, 4, generator=g)}
    masks = {
        "q.weight": torch.tensor([True, False, True, False]),
        "v.weight": torch.ones(4, dtype=torch.bool),
    }
    adapter = LoraAdapter(a, b, scaling=2.0, masks=masks)
    save_peft_adapter(adapter, tmp_path / "ad")
    config = json.loads((tmp_path / "ad" / "adapter_config.json").read_text())
    assert config["r"] == 4 and config["rank_pattern"] == {"q": 2}
    assert sorted(config["target_modules"]) == ["q", "v"]
    back = load_peft_adapter(tmp_path / "ad")
    assert back.A["q.weight"].shape == (2, 6)
    for k in a:
        torch.testing.assert_close(back.delta(k), adapter.delta(k))
