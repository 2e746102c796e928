"""The reproduction's code path on a tiny config; the smoke preset itself under ``slow``."""

import dataclasses
import os
import subprocess
import sys

import pytest

from icml26.shared import Check, Report, Row, discover
from icml26.teamtr.reproduce import PAPER, PRESETS, BCConfig, Config, judge, plot, run
from icml26.teamtr.teamtr import TrainConfig, UpdateConfig

TINY = dataclasses.replace(
    PRESETS["smoke"],
    stages=1,
    train=TrainConfig(prompts=4, group_size=2, eval_samples=1,
                      update=UpdateConfig(epochs=1, minibatches=1)),
    bc=BCConfig(demos=64, batch_size=64, cap=4, window=2, patience=1),
)  # fmt: skip


@pytest.fixture(scope="module")
def tiny_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("tiny")
    return Report.merge([run(TINY, 0, out)]), out


def test_every_method_runs_at_the_matched_budget(tiny_report):
    rep, out = tiny_report
    assert rep.methods == [
        "TeamTR", "naive sequential (GRPO)", "joint GRPO", "HAPPO", "single shared policy",
        "BC warm start",
    ]  # fmt: skip
    budget = 1 * 3 * 4 * 2
    for m in rep.methods[:-1]:
        assert rep.stat(m, "rollouts").mean == budget
    assert rep.stat("BC warm start", "rollouts").mean == 0
    checks = judge(rep, TINY)
    assert [c.name[:3] for c in checks] == ["(a)", "(b)", "(c)", "(d)"]
    assert [p.name for p in plot(rep, out)] == ["success_vs_rollouts.png"]


def _fake(success_ours, success_naive, reg_ours=0.0, reg_naive=2.0):
    rows = [
        Row.of("TeamTR", success=[success_ours] * 3, regressions=[reg_ours] * 3,
               stale_gap=[0.01] * 3),
        Row.of("naive sequential (GRPO)", success=[success_naive] * 3,
               regressions=[reg_naive] * 3, stale_gap=[0.1] * 3),
        Row.of("BC warm start", success=[0.4] * 3),
        Row.of("single shared policy", success=[0.5] * 3),
    ]  # fmt: skip
    return Report(rows=rows)


def test_judge_passes_and_fails_on_the_numbers():
    assert all(c.holds for c in judge(_fake(0.9, 0.8), Config()))
    checks = judge(_fake(0.84, 0.8, reg_ours=1.5), Config())
    assert [c.holds for c in checks] == [False, True, False, True]
    assert isinstance(checks[0], Check)


def test_registered_under_the_papers_entry_point():
    paper = discover().get("teamtr")
    assert paper is PAPER and set(PAPER.presets) == {"smoke", "paper"}
    assert dataclasses.is_dataclass(PRESETS["paper"]) and PRESETS["paper"].policy == "gpt2"
    with pytest.raises(dataclasses.FrozenInstanceError):
        PRESETS["smoke"].stages = 3


def test_cli_output_has_no_dependency_warnings():
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "icml26.shared.cli", "info", "teamtr"],
                          capture_output=True, text=True, env=env, timeout=300)  # fmt: skip
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0, text[-2000:]
    assert "TeamTR" in text
    for word in ("Warning", "transformers", "peft", "accelerate"):
        assert word not in text


@pytest.mark.slow  # the smoke preset, one seed: ~2 CPU minutes
def test_smoke_preset_one_seed(tmp_path):
    rep = Report.merge([run(PRESETS["smoke"], 0, tmp_path)])
    assert rep.stat("TeamTR", "out_of_region").mean == 0.0  # early stop keeps KL ≤ δ
    budget = 6 * 3 * 32 * 8
    assert rep.stat("naive sequential (GRPO)", "rollouts").mean == budget
    assert rep.stat("TeamTR", "success").mean > rep.stat("BC warm start", "success").mean
