"""The warmup–stable–decay schedule and the EMA."""

from __future__ import annotations

import itertools

import pytest
import torch

from icml26.scldm import EMA, OptimConfig, run_training, wsd_schedule
from icml26.shared import Plateau


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


def _run(losses_of_step, *, steps, patience=2, optim=None):
    param = torch.nn.Parameter(torch.zeros(1))
    model = torch.nn.Module()
    model.p = param
    calls = itertools.count()

    def step_loss(m, data, gen):
        return m.p.sum() * 0 + losses_of_step(next(calls))

    rule = Plateau(window=5, patience=patience, min_delta=1e-3, cap=steps)
    losses = run_training(
        model,
        step_loss,
        [torch.zeros(20, 1)],
        steps=steps,
        batch_size=4,
        optim=optim or OptimConfig(lr=1e-2),
        device=torch.device("cpu"),
        seed=0,
        stop_rule=rule,
    )
    return losses, rule


def test_a_plateau_inside_the_dit_cosine_decay_finishes_it_early():
    # the DiT's schedule: cosine from the end of a 20-step warmup to step 200. A plateau at
    # step 45 finishes the decay over 10 % of 45 steps, from the rate reached to the floor.
    optim = OptimConfig(lr=1.0, decay="cosine", decay_fraction=1.0)
    losses, rule = _run(lambda k: max(100.0 - k, 70.0), steps=200, optim=optim)
    assert rule.reason == "plateau" and rule.steps == 45
    assert len(losses) == 49
    # without the rule's stop the cosine would run the whole 200 steps
    losses, rule = _run(lambda k: 100.0 * 0.99**k, steps=200, optim=optim)
    assert len(losses) == 200 and rule.reason == "cap"


def test_run_training_stops_on_a_plateau_after_an_early_decay():
    # loss falls for 30 steps, then stays flat: windows of 5 steps, the last improving one
    # ends at step 35, two flat ones at step 45 (past the 20 warmup steps of the cap of
    # 200): decay over 10 % of 45 steps, stop at 49
    losses, rule = _run(lambda k: max(100.0 - k, 70.0), steps=200)
    assert len(losses) == 49
    assert rule.windows[-3:] == [70.0, 70.0, 70.0]
    assert rule.summary() == {"steps": 45, "reason": "plateau", "best_window_loss": 70.0}
    # a plateau inside the warmup (step 45 of a 100-step warmup for a cap of 1000) starts
    # the decay when the warmup ends: 100 + 10 % of 100 steps
    losses, rule = _run(lambda k: max(100.0 - k, 70.0), steps=1000)
    assert len(losses) == 100 + 10
    assert rule.reason == "plateau" and rule.steps == 45


def test_run_training_stops_at_the_cap_without_a_plateau():
    losses, rule = _run(lambda k: 100.0 * 0.99**k, steps=60)  # always 5 % better per window
    assert len(losses) == 60
    assert len(rule.windows) == 12
    assert rule.reason == "cap" and rule.steps == 60


def test_autoencoder_records_its_convergence_rule(tiny_adata):
    from icml26.scldm import AutoencoderConfig, ScLDM, TrainingConfig

    ae = AutoencoderConfig(n_embed=16, n_latent_tokens=2, latent_dim=4, n_layer=1, n_head=2,
                           n_head_cross=2)  # fmt: skip
    training = TrainingConfig(autoencoder_batch_size=32, autoencoder_max_steps=12,
                              autoencoder_window=4, autoencoder_patience=50)  # fmt: skip
    model = ScLDM(ae, training=training, device="cpu").fit_autoencoder(tiny_adata, seed=0)
    assert model.autoencoder_stop["reason"] == "cap" and model.autoencoder_stop["steps"] == 12
    assert len(model.history["autoencoder"]) == 12
    assert len(model.history["autoencoder_plateau"]) == 3
    assert model.diffusion_stop is None  # not fitted yet


def test_dit_trains_to_its_convergence_rule(tiny_adata):
    from icml26.scldm import AutoencoderConfig, ScLDM, TrainingConfig

    from .conftest import TINY_DIT

    ae = AutoencoderConfig(n_embed=16, n_latent_tokens=2, latent_dim=4, n_layer=1, n_head=2,
                           n_head_cross=2)  # fmt: skip
    training = TrainingConfig(autoencoder_epochs=1, autoencoder_batch_size=64, diffusion_steps=99,
                              diffusion_max_steps=9, diffusion_window=3,
                              diffusion_patience=50)  # fmt: skip
    model = ScLDM(ae, TINY_DIT, training, device="cpu").fit(tiny_adata, seed=0)
    assert model.diffusion_stop["reason"] == "cap" and model.diffusion_stop["steps"] == 9
    assert len(model.history["diffusion"]) == 9  # the cap, not diffusion_steps
    assert len(model.history["diffusion_plateau"]) == 3
    with pytest.raises(ValueError, match="diffusion_min_delta"):
        TrainingConfig(diffusion_min_delta=1.5)
    with pytest.raises(ValueError, match="diffusion_max_steps"):
        TrainingConfig(diffusion_max_steps=0)
