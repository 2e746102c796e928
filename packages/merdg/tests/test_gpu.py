"""On CUDA: paper-size training steps and scoring of fusion + MER and SimMMDG + MER."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from icml26.merdg import CoOccConfig, lodo_split, simulate_cooccurrence, train_method
from icml26.merdg.reproduce import PRESETS

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def cuda():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    return torch.device("cuda")


@pytest.mark.parametrize("method", ["fusion+mer", "simmmdg+mer"])
def test_one_paper_size_epoch_on_cuda(cuda, method):
    paper = PRESETS["paper"]
    sim = CoOccConfig(**{**paper.sim.__dict__, "per_domain": 1000})
    data = simulate_cooccurrence(sim, target=4, rng=np.random.default_rng(0))
    split = lodo_split(data, 4, rng=np.random.default_rng(0))
    cfg = paper.train.__class__(**{**paper.train.__dict__, "epochs": 1})
    res = train_method(method, split, cfg, seed=0, device=cuda)
    assert next(res.model.parameters()).is_cuda
    assert res.epochs == 1 and np.isfinite(res.train_loss[0])
    assert 0.0 <= res.last_test_acc <= 1.0


def test_stacked_runs_and_dg_baselines_on_cuda(cuda):
    from icml26.merdg import ModelConfig, TrainConfig
    from icml26.merdg.batched import Job, train_many

    splits = []
    for target in (0, 3):
        data = simulate_cooccurrence(
            CoOccConfig(per_domain=200), target=target, rng=np.random.default_rng(target)
        )
        splits.append(lodo_split(data, target, rng=np.random.default_rng(target)))
    cfg = TrainConfig(epochs=2, batch_size=30, model=ModelConfig(encoder_hidden=32))
    methods = ("fusion+mer", "simmmdg+mer", "unimodal", "fusion+mixstyle", "fusion+rsc", "mbcd")
    jobs = [Job(m, s, seed=i) for i, s in enumerate(splits) for m in methods]
    for res in train_many(jobs, cfg, device=cuda):
        assert not isinstance(res, Exception), res
        assert next(res.model.parameters()).is_cuda
        assert res.epochs == 2 and all(np.isfinite(res.train_loss))
