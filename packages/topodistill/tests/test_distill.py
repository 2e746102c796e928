"""Neighbourhood distributions, the distillation loop, persistence, and leakage guards."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from icml26.topodistill import DistillConfig, TopoDistill, rossler_lorenz
from icml26.topodistill.neighbourhood import (
    neighbourhood_kl,
    perplexity_affinities,
    squared_distances,
    student_log_affinities,
    theiler_mask,
)

TINY = DistillConfig(
    window=3,
    teacher_latent=4,
    teacher_hidden=16,
    teacher_epochs=3,
    student_window=6,
    student_hidden=16,
    student_steps=40,
    batch_size=64,
    perplexity=5.0,
    lr=3e-3,
)


@pytest.fixture(scope="module")
def blocks():
    system = rossler_lorenz(900, np.random.default_rng(0), coupling=2.0, burn_in=300)
    return system.data[:500], system.data[500:]


def test_perplexity_calibration_and_theiler_pairs():
    gen = torch.Generator().manual_seed(0)
    z = torch.randn(120, 3, generator=gen, dtype=torch.float64)
    times = torch.arange(120)
    excluded = theiler_mask(times, 3)
    p = perplexity_affinities(squared_distances(z), excluded, 8.0)
    entropy = -(p * torch.log(p.clamp_min(1e-300))).sum(-1)
    np.testing.assert_allclose(entropy.exp().numpy(), 8.0, rtol=1e-3)
    np.testing.assert_allclose(p.sum(-1).numpy(), 1.0)
    assert float(p[excluded].abs().max()) == 0.0  # temporal neighbours carry no mass
    for kernel in ("calibrated", "gaussian", "student_t"):
        log_q = student_log_affinities(z, excluded, kernel=kernel, perplexity=8.0)
        assert torch.all(torch.isinf(log_q[excluded]))
        assert float(neighbourhood_kl(p, log_q)) >= -1e-9
    same = student_log_affinities(z, excluded, kernel="calibrated", perplexity=8.0)
    assert float(neighbourhood_kl(p, same)) == pytest.approx(0.0, abs=1e-6)
    with pytest.raises(ValueError, match="perplexity"):
        perplexity_affinities(squared_distances(z), excluded, 500.0)


def test_fit_embed_and_losses_fall(blocks):
    train, test = blocks
    model = TopoDistill(TINY, seed=0, device="cpu").fit(train, lags=3, dims=3, variables=[1, 3])
    z, times = model.embed(test[:, 3], 3)
    assert z.shape == (test.shape[0] - model.span(3), 3)
    assert times[0] == model.span(3) and np.all(np.isfinite(z))
    hist = model.history
    assert np.mean(hist["teacher"][-5:]) < np.mean(hist["teacher"][:5])
    kl = hist["student3_kl"]
    assert np.mean(kl[-10:]) < np.mean(kl[:10])
    zg, _ = model.embed_global(test)
    assert zg.shape == (test.shape[0] - 2, TINY.teacher_latent)
    # a student sees only its own variable: same series, same manifold, whatever the rest
    z2, _ = model.embed(test[:, 3].copy(), 3)
    np.testing.assert_allclose(z, z2)
    with pytest.raises(KeyError, match="no student"):
        model.embed(test[:, 0], 0)
    assert model.stopping["student3"] == {**model.stopping["student3"], "steps": 40}
    assert model.stopping["teacher"]["reason"] == "cap"  # TINY caps both at a few steps


def test_students_stop_on_their_kl_plateau(blocks):
    train, _ = blocks
    changes = {"student_steps": 2000, "plateau_window": 5, "patience": 2, "min_delta": 0.2}
    cfg = DistillConfig(**{**TINY.__dict__, **changes})
    model = TopoDistill(cfg, seed=0, device="cpu").fit(train, lags=3, dims=3, variables=[1, 3])
    for v in (1, 3):
        stop = model.stopping[f"student{v}"]
        assert stop["reason"] == "plateau" and stop["steps"] < 2000
        assert len(model.history[f"student{v}_kl"]) == stop["steps"]  # frozen once stopped


def test_residual_student_starts_at_the_delay_embedding(blocks):
    train, _ = blocks
    cfg = DistillConfig(**{**TINY.__dict__, "student_steps": 1, "lr": 1e-12})
    model = TopoDistill(cfg, seed=0, device="cpu").fit(train, lags=2, dims=3, variables=[4])
    series = train[:, 4]
    z, times = model.embed(series, 4)
    std = (series - series.mean()) / series.std()
    expected = np.stack([std[times - 2 * j] for j in range(3)], axis=1)
    np.testing.assert_allclose(z, expected, atol=1e-4)


def test_save_load_round_trip(blocks, tmp_path):
    train, test = blocks
    model = TopoDistill(TINY, seed=1, device="cpu").fit(train, lags=3, variables=[0])
    path = model.save(tmp_path / "model")
    again = TopoDistill.load(path, device="cpu")
    np.testing.assert_allclose(again.embed(test[:, 0], 0)[0], model.embed(test[:, 0], 0)[0])


def test_seeded_fits_are_reproducible(blocks):
    train, test = blocks
    cfg = DistillConfig(**{**TINY.__dict__, "student_steps": 10, "teacher_epochs": 1})
    a = TopoDistill(cfg, seed=7, device="cpu").fit(train, lags=3, variables=[2])
    b = TopoDistill(cfg, seed=7, device="cpu").fit(train, lags=3, variables=[2])
    np.testing.assert_allclose(a.embed(test[:, 2], 2)[0], b.embed(test[:, 2], 2)[0])


def test_config_and_input_errors(blocks):
    train, _ = blocks
    with pytest.raises(ValueError, match="kernel"):
        DistillConfig(kernel="cauchy")
    with pytest.raises(ValueError, match="positive integer"):
        DistillConfig(student_window=0)
    with pytest.raises(ValueError, match="topo_weight"):
        DistillConfig(topo_weight=-1)
    bad = train.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        TopoDistill(TINY, device="cpu").fit(bad, lags=3)
    with pytest.raises(ValueError, match="training block"):
        TopoDistill(TINY, device="cpu").fit(train[:60], lags=3)
    with pytest.raises(RuntimeError, match="fit"):
        TopoDistill(TINY, device="cpu").embed(train[:, 0], 0)


def test_short_or_constant_training_block_raises_clearly():
    from icml26.topodistill import discover_graph, load_sardine_anchovy

    data = load_sardine_anchovy()
    values = data.values  # 77 points: shorter than the student windows with default settings
    with pytest.raises(ValueError, match="training samples"):
        TopoDistill(DistillConfig(), seed=0, device="cpu").fit(values, lags=3, dims=3)
    with pytest.raises(ValueError, match="training samples"):
        discover_graph(values, method="topodistill", n_surrogates=9, device="cpu")
    flat = np.random.default_rng(0).normal(size=(600, 2))
    flat[:, 1] = 2.0
    with pytest.raises(ValueError, match="constant"):
        TopoDistill(TINY, seed=0, device="cpu").fit(flat, lags=2, dims=2)


def test_plateau_rule_stops_and_caps():
    from icml26.topodistill.stopping import Plateau

    rule = Plateau(window=10, patience=2, min_delta=0.05, cap=10_000)
    steps = 0
    while not rule.update(1.0 / (1 + steps / 50) + 0.5):  # a loss levelling off at 0.5
        steps += 1
    assert rule.reason == "plateau" and 50 < rule.steps < 2_000
    capped = Plateau(window=10, patience=2, min_delta=0.0, cap=35)
    n = 0
    while not capped.update(10.0 - n):  # still falling: the cap ends it
        n += 1
    assert capped.reason == "cap" and capped.steps == 35
    with pytest.raises(FloatingPointError):
        Plateau(window=1, patience=1, min_delta=0.1, cap=5).update(float("nan"))
    with pytest.raises(ValueError, match="min_delta"):
        Plateau(window=1, patience=1, min_delta=1.5, cap=5)
