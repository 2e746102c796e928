import dataclasses

import numpy as np
import pytest

from icml26.paws.advantage import AdvantageConfig
from icml26.paws.baselines import IPLConfig
from icml26.paws.iql import IQLConfig
from icml26.paws.policy import PolicyConfig
from icml26.paws.reproduce import (
    ALL_METHODS,
    PAPER,
    PRESETS,
    SMOKE_METHODS,
    Config,
    judge,
    run,
)
from icml26.shared import Report

TINY = Config(
    episodes=30, n_prefs=(40,), eval_episodes=6, lambda_grid=(1.0,), recut_pairs=50,
    advantage=AdvantageConfig(cap=60, val_patience=3), policy=PolicyConfig(cap=60),
    iql=IQLConfig(cap=60), ipl=IPLConfig(cap=60),
)  # fmt: skip


@pytest.fixture(scope="module")
def tiny_full(tmp_path_factory):
    """The tiny run with every method (shared by the tests below)."""
    return run(TINY, 0, tmp_path_factory.mktemp("tiny"))


def _returns(report: Report) -> dict:
    return {(r.method, r.group): r.metrics["normalised_return"].values for r in report.rows}


def _torch_optim(params, lr, weight_decay=0.0):
    """The optimiser of releases ≤ 0.3.0 (torch.optim), for the equality test below."""
    import torch

    if weight_decay:
        return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
    return torch.optim.Adam(params, lr=lr)


def test_speed_ups_keep_every_number(tmp_path, monkeypatch, tiny_full):
    """0.4.0's speed-ups change no number: the run with the package's optimiser and one BC
    fit shared with CPL+KL's pre-training equals, bit for bit, the 0.3.0 way — torch.optim
    and CPL+KL training its own BC."""
    import icml26.paws.reproduce as reproduce
    from icml26.paws import advantage, baselines, iql, policy

    fast = tiny_full
    for module in (advantage, baselines, iql, policy):
        monkeypatch.setattr(module, "Adam", _torch_optim)
    plain_cpl = reproduce.cpl
    monkeypatch.setattr(reproduce, "cpl", lambda *a, pretrained=None, **k: plain_cpl(*a, **k))
    slow = run(TINY, 0, tmp_path)
    got = {(r.method, r.group): r.metrics["normalised_return"].values for r in fast.rows}
    want = {(r.method, r.group): r.metrics["normalised_return"].values for r in slow.rows}
    assert got == want and len(got) == len(ALL_METHODS) + 1


def test_smoke_method_list_keeps_every_number(tmp_path, tiny_full):
    """The smoke preset runs a subset of `full`'s methods on the same data: each kept row,
    the fixed-λ grid included, equals the full run's bit for bit (no method's result
    depends on which others ran, or in which order)."""
    sub = run(dataclasses.replace(TINY, methods=SMOKE_METHODS[::-1]), 0, tmp_path)
    got, want = _returns(sub), _returns(tiny_full)
    assert len(got) == len(SMOKE_METHODS) + 1
    assert got == {k: want[k] for k in got}
    paws = sub.row("PAWS", "n=40").metrics
    assert (
        paws["recut_accuracy"].values
        == tiny_full.row("PAWS", "n=40").metrics["recut_accuracy"].values
    )


def test_tiny_reproduction_runs_every_method_and_is_judged(tmp_path, capfd):
    rep = run(TINY, 0, tmp_path)
    assert {r.method for r in rep.rows} >= set(ALL_METHODS) | {"PAWS λ=1"}
    for r in rep.rows:
        assert np.isfinite(r.metrics["normalised_return"].mean)
    paws = rep.row("PAWS", "n=40").metrics
    assert abs(paws["n_eff"].mean - 4.0) <= 0.04
    assert 0.0 <= paws["recut_accuracy"].mean <= 1.0
    checks = judge(Report.merge([rep]), TINY)
    assert len(checks) == 6 and all(isinstance(c.holds, bool) for c in checks)
    out, err = capfd.readouterr()
    for word in ("gymnasium", "mujoco", "d3rlpy", "Warning"):
        assert word.lower() not in (out + err).lower()


def test_same_seed_same_numbers(tmp_path):
    cfg = dataclasses.replace(TINY, methods=("filtered BC",), n_prefs=(20,), lambda_grid=())
    a, b = run(cfg, 3, tmp_path), run(cfg, 3, tmp_path)
    assert (
        a.rows[0].metrics["normalised_return"].values
        == b.rows[0].metrics["normalised_return"].values
    )


def test_a_failing_learner_is_reported_as_data_and_judged_not_run(tmp_path, monkeypatch):
    import icml26.paws.reproduce as reproduce

    def broken(*args, **kwargs):
        raise FloatingPointError("critic diverged")

    monkeypatch.setattr(reproduce, "piql_lite", broken)
    real_fit = reproduce.fit_paws

    def flaky(pairs, cfg, **kw):  # the fixed-λ grid fails, PAWS itself runs
        if cfg.fixed_lambda is not None:
            raise FloatingPointError("weights overflowed")
        return real_fit(pairs, cfg, **kw)

    monkeypatch.setattr(reproduce, "fit_paws", flaky)
    cfg = dataclasses.replace(TINY, methods=("BC", "P-IQL-lite", "PAWS"), n_prefs=(20,))
    rep = run(cfg, 0, tmp_path)
    assert {r.method for r in rep.rows} == {"BC", "PAWS"}  # no NaN cell, no crash
    failed = [n for n in rep.notes if n.startswith("Failed")]
    assert any("P-IQL-lite: FloatingPointError: critic diverged" in n for n in failed)
    assert any("PAWS λ=1: FloatingPointError" in n for n in failed)
    assert [r["method"] for r in rep.records if r["kind"] == "failed"] == ["P-IQL-lite", "PAWS λ=1"]
    verdict = {c.name.split(": ", 1)[1]: c for c in judge(rep, cfg)}
    assert not verdict["PAWS ≥ P-IQL-lite + 0.10"].holds
    assert "not run" in verdict["PAWS ≥ P-IQL-lite + 0.10"].detail


def test_presets_and_registry():
    assert set(PRESETS) == {"smoke", "full", "paper", "point-mass-paper"}
    # the smoke list; the IQL family and CPL+KL only in `full` (every method)
    assert PRESETS["smoke"].methods == (
        "BC", "filtered BC", "P-IQL-lite", "CPL", "PAWS", "PAWS per-step",
    )  # fmt: skip
    assert PRESETS["full"].methods == ALL_METHODS
    # same data, code and budget: only the method list differs
    assert dataclasses.replace(PRESETS["full"], methods=SMOKE_METHODS) == PRESETS["smoke"]
    assert PRESETS["smoke"].lambda_grid and PRESETS["smoke"].n_prefs == (50, 500)
    assert PAPER.name == "paws" and PAPER.arxiv == "2606.11982"
    with pytest.raises(ValueError, match="unknown method"):
        Config(methods=("PPO",))


@pytest.mark.slow
def test_smoke_preset_runs_one_seed(tmp_path):
    rep = run(PRESETS["smoke"], 0, tmp_path)
    assert rep.row("PAWS", "n=500").metrics["normalised_return"].mean > 0.5
