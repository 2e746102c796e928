"""On CUDA: a paper-size epoch of CURE Stage II and SimGCD, and prediction."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from icml26.cure import CURE, CUREConfig, SimGCD, SimGCDConfig, TrainConfig, gcd_accuracy
from icml26.cure.reproduce import PRESETS, make_dataset

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def cuda():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    return torch.device("cuda")


def test_paper_size_epoch_on_cuda(cuda):
    cfg = PRESETS["paper"]
    data = make_dataset("mixture", cfg, np.random.default_rng(0))
    assert data.n_classes == 100 and data.n == 50_000
    one = TrainConfig(cap_epochs=1, batch_size=256)
    cure = CURE(CUREConfig(train1=one, train2=one, net=cfg.net), seed=0, device=cuda).fit(data)
    assert next(cure.model.parameters()).is_cuda
    acc = gcd_accuracy(data, cure.predict(data.x))
    assert 0.0 <= acc.all <= 1.0
    sim = SimGCD(SimGCDConfig(train=one, net=cfg.net), seed=0, device=cuda).fit(data)
    assert sim.stopping["steps"] == 1
    assert np.isfinite(sim.prototypes()).all()
