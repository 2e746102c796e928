"""CUDA runs of the probe fixture and of KV-cached scoring (skipped without a GPU)."""

import pytest
import torch

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def _cuda():
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")


def test_fixture_training_step_and_probe_on_cuda():
    from dataclasses import replace

    import numpy as np

    from icml26.charperturb.fixture import (
        FixtureConfig,
        LookupTransformer,
        _vocab,
        encode_lookup,
    )

    cfg = FixtureConfig()
    vocab = _vocab(cfg)
    model = LookupTransformer(len(vocab), cfg).cuda()
    _, texts, _, answers = encode_lookup(replace(cfg), np.random.default_rng(0), 16, 2)
    ids = torch.tensor([[vocab[c] for c in t] for t in texts], device="cuda")
    logits, attns, _hiddens = model(ids)
    assert logits.shape == (16, len(vocab)) and attns[0].is_cuda
    loss = torch.nn.functional.cross_entropy(
        logits, torch.tensor([vocab[a] for a in answers], device="cuda")
    )
    loss.backward()
    assert all(p.grad is not None for p in model.parameters() if p.requires_grad)
    assert torch.isfinite(loss)


def test_kv_cached_scoring_matches_on_cuda():
    from transformers import GPT2Config, GPT2LMHeadModel

    from icml26.charperturb.backends import TransformersBackend

    class Tok:
        def encode(self, s, add_special_tokens=False):
            return [ord(c) % 100 for c in s]

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=100, n_layer=2, n_embd=32, n_head=2)).cuda()
    model.eval()
    a = TransformersBackend(model, Tok()).score_options("The capital is", ["Paris", "Rome"])
    b = TransformersBackend(model, Tok(), cached=False).score_options(
        "The capital is", ["Paris", "Rome"]
    )
    assert a == pytest.approx(b, abs=1e-3)
