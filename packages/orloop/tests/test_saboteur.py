import pytest

from icml26.orloop import (
    ERROR_TYPES,
    LearnedPolicy,
    MinimalRepairAgent,
    difficulty,
    generate,
    iis_is_irreducible,
    make_instance,
    read_dataset,
    run_episode,
    validate,
    write_dataset,
)
from icml26.orloop.saboteur import ALL_TYPES
from icml26.shared import numpy_rng
from icml26.shared.cli import main as icml26_main


@pytest.mark.parametrize("error_type", ERROR_TYPES)
def test_every_error_type_gives_a_validated_instance(error_type):
    family = "milp" if error_type == "B" else "lp"
    inst = make_instance(numpy_rng(7, error_type), error_type, family=family)
    check = validate(inst)
    assert check.original_optimal and check.sabotaged_infeasible and check.fix_restores
    assert check.iis_valid and inst.iis.size >= 1
    assert inst.difficulty == difficulty(inst.iis.size)
    # the fix only touches what the injection touched: the intended rows survive it
    assert set(inst.original_constraints) <= set(inst.model.row_names) | set(
        inst.reference.row_names
    )


def test_difficulty_tiers_and_bad_input():
    assert [difficulty(k) for k in (1, 2, 3, 5, 6, 16)] == [
        "easy",
        "easy",
        "medium",
        "medium",
        "hard",
        "hard",
    ]
    with pytest.raises(ValueError, match="unknown error type"):
        make_instance(numpy_rng(0), "Z")
    with pytest.raises(ValueError, match="MILP"):
        make_instance(numpy_rng(0), "B", family="lp")
    with pytest.raises(ValueError, match="milp_fraction"):
        list(generate(2, milp_fraction=1.5))


def test_generation_is_seeded_and_survives_a_dataset_round_trip(tmp_path):
    a = list(generate(4, seed=3, milp_fraction=0.5))
    b = list(generate(4, seed=3, milp_fraction=0.5))
    assert [i.problem_id for i in a] == [i.problem_id for i in b]
    assert [i.original_objective for i in a] == [i.original_objective for i in b]
    assert sum(i.family == "milp" for i in a) == 2
    write_dataset(a, tmp_path / "ds")
    back = read_dataset(tmp_path / "ds")
    assert [i.problem_id for i in back] == [i.problem_id for i in a]
    assert all(validate(i).ok for i in back)


def test_cli_generate_writes_mps_and_index(tmp_path, capsys):
    rc = icml26_main(
        ["orloop", "generate", "--n", "3", "--out", str(tmp_path / "g"), "--seed", "1"]
    )
    assert rc == 0
    assert len(list((tmp_path / "g" / "models").glob("*.mps"))) == 3
    assert len((tmp_path / "g" / "index.jsonl").read_text().splitlines()) == 3
    assert "wrote 3 validated instances" in capsys.readouterr().out
    assert icml26_main(["orloop", "generate", "--n", "0", "--out", str(tmp_path / "h")]) == 2


def _injected(inst):
    """The names an injection touched, from its target and its record."""
    names = set(inst.target_name.split(","))
    meta = inst.meta
    for key in ("root_row", "forcing_row", "upper_row", "lower_row", "column", "symptom_row"):
        if meta.get(key):
            names.add(meta[key])
    names.update(meta.get("chain_rows", []), meta.get("rows", []))
    return names


@pytest.mark.parametrize("error_type", ALL_TYPES)
@pytest.mark.parametrize("seed", [0, 1])
def test_every_injection_is_infeasible_and_its_iis_names_what_was_injected(error_type, seed):
    family = "milp" if error_type == "B" else "lp"
    inst = make_instance(numpy_rng(seed, "inject", error_type), error_type, family=family)
    assert inst.model.is_infeasible(exact=True)
    assert iis_is_irreducible(inst.model, inst.iis)  # re-checked by solving
    members = set(inst.iis.rows) | set(inst.iis.columns)
    assert members & _injected(inst), (inst.iis, _injected(inst))


def test_official_type_h_is_a_bound_only_iis_that_only_a_bound_repair_fixes():
    inst = make_instance(numpy_rng(4, "h"), "H")
    col = inst.target_name
    j = inst.model.col(col)
    assert inst.model.col_lower[j] == 50 and inst.model.col_upper[j] == 10  # crossed box
    assert inst.iis.rows == () and inst.iis.columns == (col,)
    for agent in (MinimalRepairAgent(), LearnedPolicy()):  # neither crashes on it
        res = run_episode(agent, inst)
        assert res.success and res.fp == 1.0
        assert res.actions[0]["action"] == "UPDATE_BOUNDS" and res.actions[0]["target"] == col
    assert run_episode(MinimalRepairAgent(), inst).op == pytest.approx(1.0)
