import dataclasses

import numpy as np
import pytest

from icml26.paws.advantage import AdvantageConfig
from icml26.paws.baselines import IPLConfig
from icml26.paws.iql import IQLConfig
from icml26.paws.policy import PolicyConfig
from icml26.paws.reproduce import ALL_METHODS, PAPER, PRESETS, Config, judge, run
from icml26.shared import Report

TINY = Config(
    episodes=30, n_prefs=(40,), eval_episodes=6, lambda_grid=(1.0,), recut_pairs=50,
    advantage=AdvantageConfig(cap=60, val_patience=3), policy=PolicyConfig(cap=60),
    iql=IQLConfig(cap=60), ipl=IPLConfig(cap=60),
)  # fmt: skip


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


def test_presets_and_registry():
    assert set(PRESETS) == {"smoke", "paper"}
    assert PAPER.name == "paws" and PAPER.arxiv == "2606.11982"
    with pytest.raises(ValueError, match="unknown method"):
        Config(methods=("PPO",))


@pytest.mark.slow
def test_smoke_preset_runs_one_seed(tmp_path):
    rep = run(PRESETS["smoke"], 0, tmp_path)
    assert rep.row("PAWS", "n=500").metrics["normalised_return"].mean > 0.5
