import math

import pytest

from icml26.orloop import (
    Action,
    ActionFormatError,
    ActionType,
    RepairEnv,
    composite_reward,
    make_instance,
)
from icml26.orloop.rewards import efficiency_reward
from icml26.shared import numpy_rng


def test_scripted_trajectory_rewards(row_conflict):
    env = RepairEnv(row_conflict, max_steps=5)
    state, info = env.reset()
    assert state.solver_status == "INFEASIBLE" and set(state.iis_constraints) == {"r0", "r1"}
    assert info["iis_size"] == 3  # two rows and the bound x1 >= 0
    # GET_IIS: a diagnosis step costs the step penalty only
    state, r, term, trunc, _ = env.step(Action(ActionType.GET_IIS))
    assert r == -1 and not term and not trunc
    # relaxing r1 (x0 >= 2) by 0.5: still infeasible, IIS unchanged in size, not a drop: -1 + 5
    state, r, term, _, _ = env.step({"action": "RELAX_CONSTRAINT", "target": "r1", "value": -0.5})
    assert state.solver_status == "INFEASIBLE" and r == pytest.approx(4.0)
    assert env.model.row_lower[env.model.row("r1")] == pytest.approx(1.5)
    # dropping r0 solves it: -1 step, +10 x (3 - 0) IIS reduction, +100 terminal
    state, r, term, _, _ = env.step('{"action": "DROP_CONSTRAINT", "target": "r0"}')
    assert term and state.is_optimal() and r == pytest.approx(129.0)
    res = env.result("scripted")
    assert res.success_at_step == 3 and res.steps == 3
    assert res.diagnosed == ["r1", "r0"]
    with pytest.raises(RuntimeError, match="ended"):
        env.step(Action(ActionType.SUBMIT))


def test_bad_actions_are_observations_not_crashes(row_conflict):
    env = RepairEnv(row_conflict, max_steps=3)
    env.reset()
    for bad, expected in (
        ("not json at all", -51),
        ({"action": "EXPLODE"}, -51),
        ({"action": "DROP_CONSTRAINT"}, -101),
    ):
        state, r, term, trunc, info = env.step(bad)
        assert "error" in info["action_result"] and r == expected  # the last also ends it: -50
    assert trunc and not term  # three invalid steps used the budget
    env.reset()
    state, r, *_ = env.step({"action": "DROP_CONSTRAINT", "target": "nope"})
    assert "no row named 'nope'" in state.last_result["error"] and r == -51
    state, r, *_ = env.step({"action": "UPDATE_BOUNDS", "target": "x0", "value": 5, "value2": 1})
    assert "lower <= upper" in state.last_result["error"]
    with pytest.raises(ActionFormatError, match="needs a target"):
        Action(ActionType.CHECK_SLACK)
    parsed = Action.parse(
        '```json\n{"action": "update_bounds", "target": "x1", "value": 0, "value2": "inf"}\n```'
    )
    assert parsed.type is ActionType.UPDATE_BOUNDS and math.isinf(parsed.value2)


def test_check_slack_regenerate_and_reset():
    inst = make_instance(numpy_rng(3, "env"), "E")
    env = RepairEnv(inst)
    state, _ = env.reset()
    row = state.iis_constraints[0]
    state, *_ = env.step(Action(ActionType.CHECK_SLACK, target=row))
    assert state.last_result["in_iis"] and state.last_result["slack"] is None
    state, *_ = env.step(Action(ActionType.RESET))
    assert env.model.row_names == inst.model.row_names
    state, _, term, _, _ = env.step(
        Action(ActionType.REGENERATE, drop=tuple(state.iis_constraints))
    )
    assert term and state.is_optimal()
    res = env.result()
    assert res.op == pytest.approx(1.0) and res.fp == 1.0  # E's rows were both injected


def test_composite_reward_components():
    r = composite_reward("OPTIMAL", ["a", "b"], ["a", "c"], 1)
    assert r["jaccard"] == pytest.approx(1 / 3)
    assert r["total"] == pytest.approx(0.5 * 100 + 0.3 * 20 / 3 + 0.2 * 10)
    assert composite_reward("INFEASIBLE", [], ["a"], 7)["total"] == pytest.approx(
        0.5 * -50 + 0 + 0.2 * -4
    )
    graded = composite_reward("OPTIMAL", ["a"], ["a"], 3, op=0.8, graded=True)
    assert graded["outcome"] == pytest.approx(80) and graded["efficiency"] == 5
    assert [efficiency_reward(s) for s in (0, 2, 3, 5, 6, 9)] == [10, 10, 5, 5, -2, -8]
    with pytest.raises(ValueError, match="op"):
        composite_reward("OPTIMAL", [], ["a"], 1, graded=True)


@pytest.mark.parametrize(
    "bad",
    [
        {"action": "UPDATE_BOUNDS", "target": "x0", "value": 1e20, "value2": 1e21},
        {"action": "UPDATE_BOUNDS", "target": "x0", "value": -1e30, "value2": 1e20},
        {"action": "RELAX_CONSTRAINT", "target": "r0", "value": 1e20},
        {"action": "UPDATE_RHS", "target": "r0", "value": "NaN"},
        {"action": "UPDATE_RHS", "target": "r0", "value": float("nan")},
        {"action": "FLIP_SENSE", "target": "x0"},
        {"action": "UPDATE_BOUNDS", "target": "r0", "value": 0, "value2": 1},
        '{"action": "DROP_CONSTRAINT", "target": ',
        '{"action": "UPDATE_RHS", "target": "r0", "value": [1]}',
    ],
)
def test_any_bad_value_rolls_back_to_an_error_observation(row_conflict, bad):
    env = RepairEnv(row_conflict, max_steps=4)
    env.reset()
    before = (env.model.row_lower.copy(), env.model.row_upper.copy(), env.model.col_upper.copy())
    state, r, term, trunc, info = env.step(bad)
    assert "error" in info["action_result"] and r == -51 and not term and not trunc
    assert state.solver_status == "INFEASIBLE" and set(state.iis_constraints) == {"r0", "r1"}
    after = (env.model.row_lower, env.model.row_upper, env.model.col_upper)
    for x, y in zip(before, after, strict=True):
        assert (x == y).all()  # rolled back: the model is the one before the step
    state, _, term, *_ = env.step({"action": "DROP_CONSTRAINT", "target": "r0"})
    assert term and state.is_optimal()  # and the episode goes on normally


def test_flip_sense_repairs_type_a():
    inst = make_instance(numpy_rng(0, "flip"), "A")
    env = RepairEnv(inst)
    env.reset()
    _, _, term, *_ = env.step(Action(ActionType.FLIP_SENSE, target=inst.target_name))
    res = env.result()
    assert term and res.success and res.op == pytest.approx(1.0) and res.fp == 1.0
