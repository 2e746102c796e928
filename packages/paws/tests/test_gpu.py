"""A training step and a scoring step on CUDA (``pytest -m gpu``; skipped without CUDA)."""

import numpy as np
import pytest
import torch

from icml26.paws import (
    AdvantageConfig,
    PAWSConfig,
    PolicyConfig,
    evaluate_policy,
    fit_advantage,
    fit_paws,
)


def _cuda():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    return "cuda"


@pytest.mark.gpu
def test_paper_size_update_on_cuda(pairs, env):
    dev = _cuda()
    fit = fit_advantage(pairs, AdvantageConfig(cap=50, hidden=(256, 256)), seed=0, device=dev)
    assert next(fit.model.parameters()).is_cuda
    cfg = PAWSConfig(policy=PolicyConfig(cap=50, hidden=(256, 256), batch_size=1024))
    res = fit_paws(pairs, cfg, advantage=fit, seed=0, device=dev)
    assert next(res.policy.parameters()).is_cuda
    ev = evaluate_policy(res.act, env, env.starts(8, np.random.default_rng(0)))
    assert ev.failed == 0 and np.isfinite(ev.mean)


@pytest.mark.gpu
def test_transformer_advantage_on_cuda(pairs):
    dev = _cuda()
    fit = fit_advantage(pairs, AdvantageConfig(kind="transformer", cap=30), seed=0, device=dev)
    o, a = pairs.segments()
    assert np.all(np.isfinite(fit.model.segment(o, a)))


@pytest.mark.gpu
def test_iql_baselines_on_cuda(pairs, episodes):
    from icml26.paws import IPLConfig, IQLConfig, ipl, pt_iql

    dev = _cuda()
    iql = IQLConfig(cap=50, batch_size=1024)
    pol = PolicyConfig(cap=30, batch_size=1024)
    fit, info = pt_iql(pairs, episodes, iql, pol, advantage_config=AdvantageConfig(cap=30),
                       seed=0, device=dev)  # fmt: skip
    assert next(fit.policy.parameters()).is_cuda and info["critic_plateau"]["steps"] <= 50
    fit, _ = ipl(pairs, episodes, IPLConfig(iql=iql, cap=50), pol, seed=0, device=dev)
    assert np.all(np.isfinite(fit.policy.act(episodes.obs[:, 0])))
