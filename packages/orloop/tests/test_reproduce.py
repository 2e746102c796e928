"""The reproduction's code path on a reduced preset (same code as ``smoke``, fewer instances)."""

from dataclasses import replace

import pytest

from icml26.orloop.reproduce import AGENTS, LEARNED, PAPER, PRESETS, UNTRAINED, judge, run
from icml26.shared import Report


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    config = replace(
        PRESETS["smoke"],
        n_lp=6,
        n_milp=2,
        n_train=4,
        grpo_iterations=2,
        group_size=4,
        problems_per_batch=2,
        n_newsvendor=200,
    )
    rep = Report.merge([run(config, 0, tmp_path_factory.mktemp("out"))])
    rep.checks = judge(rep, config)
    return rep


def test_report_has_every_agent_group_and_metric(report):
    assert set(AGENTS) <= set(report.methods)
    for agent in AGENTS:
        stats = report.row(agent, "all").metrics
        assert {"RR@5", "OP", "FP", "steps"} <= set(stats)
        assert 0 <= stats["RR@5"].mean <= 1
    assert {"easy", "LP", "MILP", "type A", "type B", "ORBias"} <= set(report.groups)
    episodes = [r for r in report.records if r["kind"] == "episode"]
    assert len(episodes) == 8 * len(AGENTS)


def test_claim_checks_are_computed_on_measured_numbers(report):
    checks = {c.name[:3]: c for c in report.checks}
    assert set(checks) == {"(1)", "(2)", "(3)", "(4)", "(5)"}
    # what holds at every scale: solver sanity re-checked by solving, and ORBias recovery
    assert checks["(5)"].holds and checks["(4)"].holds
    # copying the IIS is perfect when it is shown and worthless before it is
    assert report.stat("CopyIIS", "DA", "all").mean == pytest.approx(1.0)
    assert report.stat("CopyIIS", "DA_blind", "all").mean == 0.0
    assert report.stat(UNTRAINED, "DA_blind", "all").mean == 0.0  # σ(0) = 0.5 blames nothing
    # the diagnosis claim is judged from the table, whatever it concludes
    da = {a: report.stat(a, "DA_blind", "all").mean for a in (LEARNED, "Phase-1 blame")}
    assert checks["(3)"].holds == (da[LEARNED] > da["Phase-1 blame"] and da[LEARNED] > 0)
    rr = {a: report.stat(a, "RR@5", "all").mean for a in (LEARNED, "GreedyDrop")}
    assert f"RR@5 {rr[LEARNED]:.3f} vs {rr['GreedyDrop']:.3f}" in checks["(1)"].detail


def test_paper_descriptor():
    assert PAPER.name == "orloop" and PAPER.method == LEARNED
    assert set(PAPER.presets) == {"smoke", "paper"}
    assert PAPER.presets["paper"].n_lp + PAPER.presets["paper"].n_milp == 5000
