"""The reproduction runs end to end at tiny size; the smoke preset is slow."""

from __future__ import annotations

from dataclasses import replace

import pytest

from icml26.geocode.reproduce import PAPER, PRESETS, TINY, judge, run


def test_tiny_reproduction_reports_every_part(tmp_path):
    cfg = replace(TINY, cache=str(tmp_path / "cache"), depth_tests=("textbook",), n_depth_test=4)
    rep = run(cfg, 0, tmp_path)
    methods = set(rep.methods)
    shallow = "held-out compositions, textbook tier"  # the off-preset depth recheck
    assert {"none arm", "code arm", "template majority"} <= {
        r.method for r in rep.rows if r.group == shallow
    }
    assert any(r.group.endswith("constructions") for r in rep.rows)
    assert {"code arm", "caption arm", "none arm", "blind (question only)"} <= methods
    assert {"template majority", "IR oracle (gold IR)", "annotation probe"} <= methods
    assert rep.stat("pipeline", "rerender_identical", "consistency").mean == 1.0
    assert rep.stat("pipeline", "reverified", "consistency").mean == 1.0
    checks = judge(rep, cfg)
    assert len(checks) == 4
    assert checks[3].holds, checks


def test_presets_and_paper():
    assert set(PRESETS) == {"smoke", "paper"}
    assert all(c.depth_tests == () for c in PRESETS.values())  # off-preset only
    from icml26.geocode.reproduce import _depth_tests

    with pytest.raises(ValueError, match="unknown tier"):
        _depth_tests(replace(TINY, depth_tests=("huge",)))
    assert PAPER.name == "geocode" and PAPER.arxiv == "2602.18745"


@pytest.mark.slow
def test_smoke_claim(tmp_path):
    rep = run(PRESETS["smoke"], 0, tmp_path)
    checks = judge(rep, PRESETS["smoke"])
    assert checks[2].holds and checks[3].holds


@pytest.mark.slow
def test_tiny_reproduction_with_grpo_after_sft(tmp_path):
    from icml26.geocode.align import GRPOConfig

    cfg = replace(
        TINY,
        cache=str(tmp_path / "cache"),
        arms=("none",),
        grpo=GRPOConfig(samples=4, batch_size=4, cap=2, window=1, patience=1),
    )
    rep = run(cfg, 0, tmp_path)
    stops = [r["stopping"] for r in rep.records if r.get("method") == "none arm"]
    assert len(stops) == 1 and stops[0]["grpo"]["steps"] <= 2
    assert "reward_last" in stops[0]["grpo"]
