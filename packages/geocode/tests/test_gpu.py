"""On CUDA: a training step and greedy decoding of the alignment model."""

from __future__ import annotations

import pytest
import torch

from icml26.geocode.align import AlignConfig, evaluate, train

pytestmark = pytest.mark.gpu


def test_train_step_and_decode_on_cuda(problems):
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    cfg = AlignConfig(batch_size=8, cap=3, window=1, patience=5)
    res = train(problems * 4, "code", cfg, seed=0, device="cuda")
    assert next(res.model.parameters()).is_cuda
    assert 0.0 <= evaluate(res, problems)["accuracy"] <= 1.0
