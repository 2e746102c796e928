"""MBCD (reconstructed from its abstract) at tiny sizes: its parts and one training run."""

from dataclasses import replace

import numpy as np
import pytest
import torch
from torch import nn

from icml26.merdg import CoOccConfig, ModelConfig, TrainConfig, lodo_split, simulate_cooccurrence
from icml26.merdg.batched import Job, train_batched, train_many
from icml26.merdg.mbcd import (
    MBCDConfig,
    distillation_loss,
    ema_update,
    gradient_consistency_loss,
    modality_dropout_mask,
    modality_dropout_probs,
)
from icml26.merdg.models import MultimodalNet
from icml26.merdg.train import mbcd_objective, train_method

TINY = TrainConfig(
    epochs=3,
    batch_size=30,
    model=ModelConfig(encoder_hidden=16, embed_dim=8, proj_hidden=16, proj_dim=8, fusion_hidden=16),
)


@pytest.fixture(scope="module")
def split():
    data = simulate_cooccurrence(CoOccConfig(per_domain=90), target=1, rng=np.random.default_rng(1))
    return lodo_split(data, 1, rng=np.random.default_rng(2))


def test_the_more_confident_modality_is_dropped_more():
    y = torch.tensor([0, 1, 2, 0])
    sure = torch.nn.functional.one_hot(y, 3).float() * 10.0  # ~certain of the true class
    unsure = torch.zeros(4, 3)  # uniform: 1/3
    p = modality_dropout_probs([sure, unsure], y, p_max=0.5)
    assert p[0] == pytest.approx(0.5)
    assert p[1] == pytest.approx(0.5 * (1 / 3) / float(sure.softmax(-1)[0, 0]), rel=1e-4)
    keep = modality_dropout_mask(p, 20000, generator=torch.Generator().manual_seed(0))
    assert keep.shape == (20000, 2)
    assert keep.sum(1).min() >= 1  # never every modality dropped
    assert float(1 - keep[:, 0].mean()) > float(1 - keep[:, 1].mean()) + 0.2
    # a sample keeps all only where both would have been dropped: rate p0 (1 - p1) for m0
    assert float(1 - keep[:, 0].mean()) == pytest.approx(float(p[0] * (1 - p[1])), abs=0.02)


def test_gradient_consistency_is_zero_for_aligned_and_two_for_opposite_gradients():
    e = torch.randn(6, 4, requires_grad=True)
    w = torch.randn(4)
    same = gradient_consistency_loss([e], [(e @ w).sum()], (2 * e @ w).sum())
    opposite = gradient_consistency_loss([e], [(e @ w).sum()], -(e @ w).sum())
    assert float(same) == pytest.approx(0.0, abs=1e-6)
    assert float(opposite) == pytest.approx(2.0, abs=1e-6)


def test_gradient_consistency_has_a_gradient_to_the_parameters():
    torch.manual_seed(0)
    enc, head, fus = nn.Linear(3, 4), nn.Linear(4, 2), nn.Linear(4, 2)
    x, y = torch.randn(8, 3), torch.randint(0, 2, (8,))
    e = enc(x)
    lu = nn.functional.cross_entropy(head(e), y)
    lf = nn.functional.cross_entropy(fus(torch.tanh(e)), y)
    gradient_consistency_loss([e], [lu], lf).backward()
    assert enc.weight.grad is not None and float(enc.weight.grad.abs().sum()) > 0
    assert float(head.weight.grad.abs().sum()) > 0


def test_distillation_is_zero_when_branches_match_the_teacher():
    t = torch.randn(5, 4)
    assert float(distillation_loss(t, [t.clone(), t.clone()], 2.0)) == pytest.approx(0, abs=1e-6)
    assert float(distillation_loss(t, [torch.zeros(5, 4)], 2.0)) > 0


def test_ema_teacher_moves_towards_the_student():
    torch.manual_seed(0)
    s, t = nn.Linear(3, 2), nn.Linear(3, 2)
    before = (t.weight - s.weight).detach().abs().sum()
    ema_update(t, s, 0.9)
    assert float((t.weight - s.weight).detach().abs().sum()) == pytest.approx(
        0.9 * float(before), rel=1e-5
    )
    ema_update(t, s, 0.0)
    torch.testing.assert_close(t.weight, s.weight)


def test_config_errors():
    with pytest.raises(ValueError, match="p_max"):
        MBCDConfig(p_max=1.0)
    with pytest.raises(ValueError, match="ema_decay"):
        MBCDConfig(ema_decay=1.0)
    with pytest.raises(ValueError, match="temperature"):
        MBCDConfig(temperature=0.0)


def test_objective_is_finite_and_reaches_every_part(split):
    torch.manual_seed(0)
    model = MultimodalNet(split.train.dims, 6, "mbcd", TINY.model)
    teacher = MultimodalNet(split.train.dims, 6, "mbcd", TINY.model).eval()
    xs = [torch.as_tensor(x[:30]) for x in split.train.features]
    y = torch.as_tensor(split.train.labels[:30])
    loss = mbcd_objective(model, teacher, xs, y, TINY, torch.Generator().manual_seed(0))
    assert loss.ndim == 0 and torch.isfinite(loss)
    loss.backward()
    for part in (model.encoders, model.heads, model.fusion):
        assert any(float(p.grad.abs().sum()) > 0 for p in part.parameters() if p.grad is not None)


def test_mbcd_trains_and_returns_its_teacher(split):
    cfg = replace(TINY, mbcd=MBCDConfig(ema_decay=0.8))  # 27 steps: a short average
    res = train_method("mbcd", split, cfg, seed=0, device="cpu")
    assert res.epochs <= 3 and all(np.isfinite(res.train_loss))
    assert res.model.arch == "mbcd" and not res.model.training
    assert all(not p.requires_grad for p in res.model.parameters())  # the averaged weights
    assert res.train_loss[-1] < res.train_loss[0]
    assert 0.0 <= res.last_test_acc <= 1.0
    torch.manual_seed(0)
    init = MultimodalNet(split.train.dims, 6, "mbcd", TINY.model)
    moved = [
        float((a - b).detach().abs().max())
        for a, b in zip(res.model.parameters(), init.parameters(), strict=True)
    ]
    assert min(moved) > 0  # the teacher averaged the student's steps
    again = train_method("mbcd", split, cfg, seed=0, device="cpu")
    assert again.train_loss == res.train_loss  # same seed, same numbers
    # routed to one-at-a-time training by train_many, refused by the stacked trainer
    many = train_many([Job("mbcd", split, seed=0)], cfg, device="cpu")
    assert many[0].train_loss == res.train_loss
    with pytest.raises(ValueError, match="one at a time"):
        train_batched([Job("mbcd", split)], TINY)


def test_without_its_parts_the_objective_is_fused_plus_unimodal_ce(split):
    off = replace(TINY, mbcd=MBCDConfig(p_max=0.0, lambda_gc=0.0, lambda_kd=0.0))
    torch.manual_seed(0)
    model = MultimodalNet(split.train.dims, 6, "mbcd", TINY.model).eval()  # dropout off
    xs = [torch.as_tensor(x[:30]) for x in split.train.features]
    y = torch.as_tensor(split.train.labels[:30])
    ce = torch.nn.functional.cross_entropy
    emb = model.embed(xs)
    want = ce(model(xs), y) + sum(ce(h(e), y) for h, e in zip(model.heads, emb, strict=True)) / 2
    got = mbcd_objective(model, model, xs, y, off)
    torch.testing.assert_close(got, want)
