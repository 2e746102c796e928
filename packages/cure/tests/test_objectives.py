import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from icml26.cure import (
    distill_loss,
    info_nce_logits,
    js_consistency,
    memax_loss,
    supcon_loss,
    teacher_temperatures,
)


def _softmax(a):
    e = np.exp(a - a.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_teacher_schedule_is_simgcds():
    t = teacher_temperatures(200, 30)
    assert len(t) == 200 and t[0] == pytest.approx(0.07) and t[29] == pytest.approx(0.04)
    assert np.all(t[30:] == 0.04)
    with pytest.raises(ValueError):
        teacher_temperatures(10, 30)


def test_distill_loss_matches_hand_computation():
    rng = np.random.default_rng(0)
    cos = rng.uniform(-1, 1, size=(4, 3))  # two views of 2 samples
    got = float(distill_loss(torch.tensor(cos), torch.tensor(cos), 0.05))
    q = _softmax(cos / 0.05)
    logp = np.log(_softmax(cos / 0.1))
    q1, q2, s1, s2 = q[:2], q[2:], logp[:2], logp[2:]
    want = 0.5 * ((-q1 * s2).sum(1).mean() + (-q2 * s1).sum(1).mean())
    assert got == pytest.approx(want, rel=1e-10)


def test_teacher_receives_no_gradient():
    student = torch.randn(6, 4, requires_grad=True)
    teacher = torch.randn(6, 4, requires_grad=True)
    distill_loss(student, teacher, 0.07).backward()
    assert teacher.grad is None
    assert student.grad is not None and student.grad.abs().sum() > 0


def test_memax_matches_hand_computation_and_is_zero_when_uniform():
    cos = np.array([[0.2, -0.1, 0.5], [0.0, 0.3, -0.4]])
    pbar = _softmax(cos / 0.1).mean(0)
    want = float(np.sum(pbar * np.log(pbar)) + math.log(3))
    assert float(memax_loss(torch.tensor(cos))) == pytest.approx(want, rel=1e-10)
    assert float(memax_loss(torch.zeros(5, 4))) == pytest.approx(0.0, abs=1e-12)


def test_info_nce_logits_put_the_other_view_first():
    f = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.1], [0.1, 1.0]])
    logits, targets = info_nce_logits(f)
    fn = F.normalize(f, dim=1)
    assert logits.shape == (4, 3) and torch.all(targets == 0)
    assert float(logits[0, 0]) == pytest.approx(float(fn[0] @ fn[2]))
    assert float(logits[1, 0]) == pytest.approx(float(fn[1] @ fn[3]))


def test_supcon_matches_hand_computation():
    rng = np.random.default_rng(1)
    feats = rng.normal(size=(3, 2, 4))
    feats /= np.linalg.norm(feats, axis=-1, keepdims=True)
    labels = np.array([0, 0, 1])
    got = float(supcon_loss(torch.tensor(feats), torch.tensor(labels)))
    a = np.concatenate([feats[:, 0], feats[:, 1]])
    lab = np.concatenate([labels, labels])
    total = []
    for i in range(6):
        others = [j for j in range(6) if j != i]
        denom = np.log(np.sum(np.exp(a[i] @ a[others].T / 0.07)))
        pos = [j for j in others if lab[j] == lab[i]]
        total.append(-np.mean([a[i] @ a[j] / 0.07 - denom for j in pos]))
    assert got == pytest.approx(np.mean(total), rel=1e-8)


def test_js_is_zero_for_equal_views_and_bounded_by_log2():
    c = torch.randn(3, 5)
    assert float(js_consistency(torch.cat([c, c]))) == pytest.approx(0.0, abs=1e-7)
    far = torch.cat([torch.eye(3) * 50, torch.eye(3)[[1, 2, 0]] * 50])
    assert 0.6 < float(js_consistency(far)) <= math.log(2) + 1e-6
