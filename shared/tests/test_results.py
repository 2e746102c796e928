from __future__ import annotations

import json

import numpy as np
import pytest

from icml26.shared import Check, Report, Row, Stat, reproduce, summarize
from icml26.shared.results import Environment


def test_stat_summary_and_validation():
    s = Stat.of([1.0, 2.0, 3.0])
    assert (s.n, s.mean, s.sd) == (3, 2.0, 1.0)
    assert str(s) == "2 ± 1"
    assert Stat.of(0.5).sd == 0.0 and str(Stat.of(0.5)) == "0.5"
    with pytest.raises(ValueError, match="finite"):
        Stat.of([1.0, float("nan")])
    with pytest.raises(ValueError, match="at least one"):
        Stat.of([])


def test_merge_pools_values_in_seed_order():
    reps = [
        Report(
            rows=[Row.of("a", group="g", acc=v), Row.of("b", acc=v / 2)],
            records=[{"s": i}],
            seeds=[i],
        )
        for i, v in enumerate([0.2, 0.4, 0.6])
    ]
    merged = Report.merge(reps)
    assert merged.stat("a", "acc", "g").values == (0.2, 0.4, 0.6)
    assert merged.stat("b", "acc").mean == pytest.approx(0.2)
    assert merged.records == [{"s": 0}, {"s": 1}, {"s": 2}]
    assert merged.seeds == [0, 1, 2]
    with pytest.raises(KeyError, match="methods"):
        merged.stat("c", "acc")
    with pytest.raises(KeyError, match="no metric"):
        merged.stat("a", "loss", "g")


def test_json_round_trip_and_markdown(tmp_path):
    rep = Report(
        rows=[Row.of("ours", acc=[0.9, 0.95]), Row.of("base", acc=[0.5, 0.6], time=np.float32(2))],
        paper="p",
        preset="smoke",
        claim="ours wins",
        criterion="acc gap",
        checks=[Check("gap", True, "0.37")],
        records=[{"x": np.arange(3), "y": np.float64(1.5), "z": float("nan")}],
        environment=Environment.capture(distribution=None, seeds=[0, 1], config={"k": (1, 2)}),
    )
    paths = rep.write(tmp_path)
    back = Report.read(paths[0])
    assert back.stat("ours", "acc").values == (0.9, 0.95)
    assert back.holds is True
    assert back.records == [{"x": [0, 1, 2], "y": 1.5, "z": None}]
    assert back.environment.config == {"k": [1, 2]}
    md = paths[1].read_text()
    assert "| ours | 0.925 ± 0.035 |" in md and "- [x] gap — 0.37" in md


def test_read_rejects_other_schema(tmp_path):
    path = tmp_path / "report.json"
    path.write_text(json.dumps({"schema_version": 99, "rows": []}))
    with pytest.raises(ValueError, match="schema version"):
        Report.read(path)
    path.write_text("{not json")
    with pytest.raises(ValueError, match="not a JSON report"):
        Report.read(path)


def test_holds_is_none_without_checks():
    assert Report(rows=[]).holds is None
    assert Report(rows=[], checks=[Check("a", True), Check("b", False)]).holds is False


def test_reproduce_from_python_and_summary(fake_install, tmp_path):
    from icml26.shared import discover

    paper = discover().get("fake")
    rep = reproduce(paper, preset="smoke", seeds=[3, 5], out=tmp_path / "r")
    assert rep.seeds == [3, 5] and rep.holds
    assert (tmp_path / "r" / "fake" / "smoke" / "report.json").exists()
    s = summarize(paper, rep)
    assert s.baseline_name == "baseline" and s.method > s.best_baseline
    with pytest.raises(ValueError, match="at least 1"):
        reproduce(paper, seeds=0, out=tmp_path)


def test_same_seed_same_numbers(fake_install, tmp_path):
    from icml26.shared import discover

    paper = discover().get("fake")
    a = reproduce(paper, seeds=[7], out=tmp_path / "a")
    b = reproduce(paper, seeds=[7], out=tmp_path / "b")
    assert a.stat("ours", "score", "easy").values == b.stat("ours", "score", "easy").values
