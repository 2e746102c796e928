"""The warmup–stable–decay schedule and the EMA."""

from __future__ import annotations

import itertools

import pytest
import torch

from icml26.scldm import EMA, wsd_schedule


def test_wsd_schedule_sqrt():
    f = wsd_schedule(
        100, warmup_fraction=0.1, decay_fraction=0.1, decay="sqrt", final_lr_factor=0.1
    )
    assert f(0) == pytest.approx(0.01)  # 1 / init_div_factor
    assert f(5) == pytest.approx(0.5 + 0.5 / 100)
    assert f(10) == f(50) == f(89) == 1.0
    assert f(90) == pytest.approx(1.0)
    assert f(95) == pytest.approx(0.1 + 0.9 * (1 - 0.5**0.5))
    assert f(100) == pytest.approx(0.1)


def test_wsd_schedule_cosine_decays_after_warmup():
    f = wsd_schedule(100, decay_fraction=1.0, decay="cosine")
    values = [f(s) for s in range(10, 100)]
    assert values[0] == pytest.approx(1.0)
    assert all(a >= b for a, b in itertools.pairwise(values))
    with pytest.raises(ValueError, match="decay"):
        wsd_schedule(10, decay="linear")


def test_ema_copies_then_averages():
    net = torch.nn.Linear(2, 1, bias=False)
    ema = EMA(net, beta=0.5, update_every=1, update_after_step=1)
    with torch.no_grad():
        net.weight.fill_(1.0)
    ema.update(net, 1)  # before update_after_step: a copy
    assert torch.allclose(ema.model.weight, torch.ones(1, 2))
    with torch.no_grad():
        net.weight.fill_(3.0)
    ema.update(net, 2)
    assert torch.allclose(ema.model.weight, torch.full((1, 2), 2.0))
