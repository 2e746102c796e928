"""The authors' released record format (``dataset.json`` + ``models/*.mps``), on a fixture
written by this package in that layout (``tests/fixtures/official``)."""

import json
import shutil
from pathlib import Path

import pytest

from icml26.orloop import (
    MinimalRepairAgent,
    evaluate,
    read_dataset,
    read_official_records,
    summarize,
    validate,
    write_official_dataset,
)
from icml26.shared.cli import main as icml26_main

FIXTURE = Path(__file__).parent / "fixtures" / "official"


def test_official_records_are_read_as_shipped():
    recs = read_official_records(FIXTURE)
    assert [r["problem_type"] for r in recs] == ["lp", "lp", "lp", "mip"]
    assert recs[0]["iis_bounds"] == ["x0"]  # Gurobi-style: variable names, no side
    insts = read_dataset(FIXTURE)
    assert [i.error_type for i in insts] == ["H", "G", "A", "D"]
    assert [i.family for i in insts] == ["lp", "lp", "lp", "milp"]
    h = insts[0]
    assert h.iis.rows == () and h.iis.columns == ("x0",) and h.iis.method == "highs"
    assert h.meta["reference_iis"] == {"constraints": [], "bounds": ["x0"]}
    assert h.fix == [] and h.original_objective == pytest.approx(recs[0]["original_objective"])
    for inst in insts:
        check = validate(inst)  # no replayable fix: only what can be re-solved is checked
        assert check.original_optimal is None and check.fix_restores is None
        assert check.sabotaged_infeasible and check.iis_valid and check.ok
    stored = read_dataset(FIXTURE, iis="stored")
    assert stored[0].iis.method == "stored" and stored[0].iis.bounds == (("x0", "boxed"),)
    assert [i.iis.rows for i in read_dataset(FIXTURE, limit=2)] == [i.iis.rows for i in insts[:2]]


def test_round_trip_and_minimal_repair_on_the_fixture(tmp_path):
    insts = read_dataset(FIXTURE)
    write_official_dataset(insts, tmp_path / "again")
    back = read_dataset(tmp_path / "again")
    assert [i.problem_id for i in back] == [i.problem_id for i in insts]
    assert [i.iis.rows for i in back] == [i.iis.rows for i in insts]
    res = summarize(evaluate(MinimalRepairAgent(), back))
    assert res["RR@5"] == 1.0 and res["FP"] == 1.0


def test_eval_cli_on_the_official_layout(tmp_path, capsys):
    rc = icml26_main(["orloop", "eval", "--data", str(FIXTURE), "--agent", "copy-iis", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["agent"] == "CopyIIS" and out["all"]["n"] == 4
    assert out["all"]["DA"] == 1.0 and out["by_type"]["H"]["RR"] == 0.0  # nothing to drop
    rc = icml26_main(
        ["orloop", "eval", "--data", str(FIXTURE), "--agent", "copy-iis", "--hide-iis", "--json"]
    )
    assert json.loads(capsys.readouterr().out)["all"]["DA_blind"] == 0.0
    assert icml26_main(["orloop", "eval", "--data", str(tmp_path), "--agent", "random"]) == 2
    assert "no dataset" in capsys.readouterr().err


def test_bad_official_records_name_the_problem(tmp_path):
    ds = tmp_path / "ds"
    shutil.copytree(FIXTURE, ds)
    doc = json.loads((ds / "dataset.json").read_text())
    del doc["problems"][1]["model_file"]
    (ds / "dataset.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=r"problem 1 \('lp_typeG_001'\) lacks \['model_file'\]"):
        read_dataset(ds)
    (ds / "dataset.json").write_text("{broken")
    with pytest.raises(ValueError, match="not a JSON document"):
        read_dataset(ds)


def test_cli_rejects_a_bad_milp_fraction_and_leaves_no_index(tmp_path, capsys):
    out = tmp_path / "g"
    assert (
        icml26_main(["orloop", "generate", "--n", "2", "--out", str(out), "--milp-fraction", "1.5"])
        == 2
    )
    assert "[0, 1]" in capsys.readouterr().err and not out.exists()
    rc = icml26_main(
        [
            "orloop",
            "generate",
            "--n",
            "2",
            "--out",
            str(out),
            "--lp-types",
            "B",
            "--milp-fraction",
            "0",
        ]
    )
    assert rc == 2 and not (out / "index.jsonl").exists()
