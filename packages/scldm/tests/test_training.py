"""The warmup–stable–decay schedule and the EMA."""

from __future__ import annotations

import itertools

import pytest
import torch

from icml26.scldm import EMA, OptimConfig, PlateauRule, run_training, wsd_schedule


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


def test_plateau_rule_counts_windows_without_relative_improvement():
    rule = PlateauRule(4, patience=2, min_delta=0.01)
    assert not rule.observe(10.0)
    assert not rule.observe(9.0)  # improved by 10 %
    assert not rule.observe(8.95)  # 0.6 % < 1 %: one bad window
    assert not rule.observe(8.0)  # improved: the count restarts
    assert not rule.observe(7.99)
    assert rule.observe(8.5)  # two bad windows in a row
    assert rule.history == [10.0, 9.0, 8.95, 8.0, 7.99, 8.5]
    with pytest.raises(ValueError):
        PlateauRule(0)


def _run(losses_of_step, *, steps, patience=2):
    param = torch.nn.Parameter(torch.zeros(1))
    model = torch.nn.Module()
    model.p = param
    calls = itertools.count()

    def step_loss(m, data, gen):
        return m.p.sum() * 0 + losses_of_step(next(calls))

    rule = PlateauRule(5, patience=patience, min_delta=1e-3)
    losses = run_training(
        model,
        step_loss,
        [torch.zeros(20, 1)],
        steps=steps,
        batch_size=4,
        optim=OptimConfig(lr=1e-2),
        device=torch.device("cpu"),
        seed=0,
        stop_rule=rule,
    )
    return losses, rule


def test_run_training_stops_on_a_plateau_after_an_early_decay():
    # loss falls for 30 steps, then stays flat: windows of 5 steps, the last improving one
    # ends at step 35, two flat ones at step 45 (past the 20 warmup steps of the cap of
    # 200): decay over 10 % of 45 steps, stop at 49
    losses, rule = _run(lambda k: max(100.0 - k, 70.0), steps=200)
    assert len(losses) == 49
    assert rule.history[-3:] == [70.0, 70.0, 70.0]
    # a plateau inside the warmup is not acted on: with a cap of 1000 (warmup 100) the
    # decay starts at the first window end after the warmup
    losses, _ = _run(lambda k: max(100.0 - k, 70.0), steps=1000)
    assert len(losses) == 100 + 10


def test_run_training_stops_at_the_cap_without_a_plateau():
    losses, rule = _run(lambda k: 100.0 * 0.99**k, steps=60)  # always 5 % better per window
    assert len(losses) == 60
    assert len(rule.history) == 12
