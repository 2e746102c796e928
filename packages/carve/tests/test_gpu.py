"""CUDA runs at small size (``-m gpu``; skipped without a GPU)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from icml26.carve import CARVE, ContinualRouter

pytestmark = pytest.mark.gpu


@pytest.fixture
def cuda():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    return torch.device("cuda")


def test_training_step_and_routing_on_cuda(cuda, tiny_hub, tiny_features, fast_train):
    _, xs_train, xs_test = tiny_features
    learner = ContinualRouter(tiny_hub, xs_train[0].shape[1], train=fast_train, strategy=CARVE,
                              seed=0, device=cuda)  # fmt: skip
    learner.learn(0, xs_train[0])
    learner.learn(1, xs_train[1])  # two phases, anchors, coreset replay
    assert learner.router.projection.weight.device.type == "cuda"
    assert learner.history[-1]["hard_share"] > 0
    acc = learner.evaluate(1, xs_test)
    assert acc[0]["domain"] > 3 / len(tiny_hub.domains)
    pred = learner.router.predict(xs_test[0])
    with torch.no_grad():
        scores = learner.router.scores(xs_test[0], learner.router.num_models).cpu().numpy()
    np.testing.assert_array_equal(pred, scores.argmax(1))


def test_lora_backbone_trains_and_routes_on_cuda(cuda, tiny_hub, fast_train):
    """The paper preset's tower (peft LoRA inside the router) at tiny size on CUDA."""
    pytest.importorskip("transformers")
    from icml26.carve.lora import make_backbone

    tower = make_backbone("tiny", seed=0, max_length=16)
    xs = [tower.tokenize(e.train.texts) for e in tiny_hub.experiences[:2]]
    learner = ContinualRouter(tiny_hub, xs[0].shape[1], train=fast_train, strategy=CARVE,
                              seed=0, device=cuda, backbone=tower)  # fmt: skip
    before = {n: p.detach().cpu().clone() for n, p in learner.router.named_parameters()
              if "lora_B" in n or "lora_b" in n}  # fmt: skip
    learner.learn(0, xs[0])
    learner.learn(1, xs[1])
    after = dict(learner.router.named_parameters())
    assert any(not torch.equal(after[n].detach().cpu(), v) for n, v in before.items())
    assert after["projection.weight"].device.type == "cuda"
    pred = learner.router.predict(xs[1])
    assert pred.shape == (len(xs[1]),) and pred.max() < learner.router.num_models
