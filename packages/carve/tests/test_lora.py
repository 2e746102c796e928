import pytest
import torch
from torch import nn

from icml26.carve import CarveRouter
from icml26.carve.lora import LoRALinear, TransformerBackbone, apply_lora


def test_lora_starts_at_the_base_layer_and_trains_only_the_update():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
    x = torch.randn(4, 6)
    before = net(x).detach()
    assert apply_lora(net, targets=("0", "2"), r=2, alpha=4.0, dropout=0.0) == 2
    torch.testing.assert_close(net(x), before)  # B = 0 at init
    trainable = {n for n, p in net.named_parameters() if p.requires_grad}
    assert trainable == {"0.lora_a", "0.lora_b", "2.lora_a", "2.lora_b"}
    net(x).sum().backward()
    assert net[0].base.weight.grad is None and net[2].lora_b.grad is not None
    with pytest.raises(ValueError, match=r"no nn\.Linear"):
        apply_lora(nn.Sequential(nn.ReLU()), targets=("q_proj",))
    with pytest.raises(TypeError):
        LoRALinear(nn.ReLU())


def test_router_on_a_lora_transformer_backbone():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.BertConfig(vocab_size=40, hidden_size=16, num_hidden_layers=1,
                                  num_attention_heads=2, intermediate_size=32)  # fmt: skip
    bert = transformers.BertModel(cfg)
    backbone = TransformerBackbone(bert, tokenizer=None, pooling="last_token",
                                   targets=("query", "value"), r=4, max_length=6)  # fmt: skip
    router = CarveRouter(12, 8, backbone=backbone)
    router.register(["a", "b", "c"])
    ids = torch.randint(1, 40, (5, 6))
    mask = torch.ones(5, 6, dtype=torch.long)
    mask[:, 4:] = 0  # padded tails: last_token pools position 3
    x = torch.cat([ids, mask], dim=1)
    logits = router(x, torch.tensor([[0, 1, 2]] * 5))
    assert logits.shape == (5, 3)
    logits[:, 0].sum().backward()
    grads = {n for n, p in router.named_parameters() if p.grad is not None}
    assert "projection.weight" in grads and any("lora_a" in n.lower() for n in grads)
    assert not any(n.endswith("query.base.weight") for n in grads)
    assert set(router.predict(x)) <= {0, 1, 2}


def test_builtin_and_peft_lora_agree_on_the_trainable_set():
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("peft")
    cfg = transformers.BertConfig(vocab_size=40, hidden_size=16, num_hidden_layers=1,
                                  num_attention_heads=2, intermediate_size=32)  # fmt: skip
    sizes = {}
    for kind in ("peft", "builtin"):
        torch.manual_seed(0)
        bert = transformers.BertModel(cfg, add_pooling_layer=False)
        tower = TransformerBackbone(bert, None, targets=("query", "value"), r=4, max_length=6,
                                    lora=kind)  # fmt: skip
        assert tower.lora == kind and tower.n_lora == 2
        sizes[kind] = sum(p.numel() for p in tower.parameters() if p.requires_grad)
    assert sizes["peft"] == sizes["builtin"] == 2 * 2 * 4 * 16  # A (4x16) and B (16x4) twice
    with pytest.raises(ValueError, match="lora must be"):
        TransformerBackbone(transformers.BertModel(cfg), None, targets=("query",), lora="qlora")
