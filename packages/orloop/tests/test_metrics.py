import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icml26.orloop import (
    Edit,
    EpisodeResult,
    diagnostic_accuracy,
    feasibility_preservation,
    optimality_preservation,
    rr_at_k,
    semantic_drift,
    summarize,
)


def ep(success_at, steps, obj=10.0, rows=("a", "b", "c", "d"), diag=("a",), iis=(("a", "b"),)):
    return EpisodeResult(
        problem_id="p",
        agent="t",
        success=success_at is not None,
        final_status="OPTIMAL" if success_at is not None else "INFEASIBLE",
        steps=steps,
        success_at_step=success_at,
        objective=obj if success_at is not None else None,
        original_objective=10.0,
        remaining_constraints=list(rows),
        original_constraints=["a", "b", "c", "d"],
        diagnosed=list(diag),
        iis_sets=[list(s) for s in iis],
    )


def test_rr_at_k_counts_steps_to_first_optimal():
    results = [ep(1, 1), ep(3, 8), ep(6, 6), ep(None, 10)]
    assert rr_at_k(results, 1) == 0.25
    assert rr_at_k(results, 5) == 0.5  # the second episode was OPTIMAL at step 3, SUBMIT at 8
    assert rr_at_k(results, 10) == 0.75
    with pytest.raises(ValueError):
        rr_at_k(results, 0)


def test_diagnostic_accuracy_accepts_any_valid_iis():
    one = ep(1, 1, diag=("c", "d"), iis=(("a", "b"), ("c", "d", "e")))
    two = ep(1, 1, diag=("a", "x"), iis=(("a", "b"),))
    recall, precision = diagnostic_accuracy([one, two])
    assert recall == pytest.approx((2 + 1) / (3 + 2))  # one is scored against {c, d, e}
    assert precision == pytest.approx(3 / 4)


def test_op_fp_and_semantic_drift():
    assert optimality_preservation(9.0, 10.0) == pytest.approx(0.9)
    assert optimality_preservation(30.0, 10.0) == 0.0
    assert optimality_preservation(0.0, 0.0) == 1.0 and optimality_preservation(1e-3, 0.0) == 0.0
    assert feasibility_preservation(["a", "b", "x"], ["a", "b", "c", "d"]) == 0.5
    with pytest.raises(ValueError):
        feasibility_preservation([], [])
    assert semantic_drift(ep(1, 1, obj=10.0)) is False
    assert semantic_drift(ep(1, 1, obj=8.0)) is True  # objective moved 20 %
    assert semantic_drift(ep(1, 1, rows=("a", "b", "c"))) is True  # a quarter of the rows gone
    assert semantic_drift(ep(None, 5)) is None
    s = summarize([ep(1, 1), ep(None, 10)])
    assert s["RR"] == 0.5 and s["OP"] == 1.0 and s["steps"] == 5.5


@settings(max_examples=60, deadline=None)
@given(
    z=st.floats(-1e6, 1e6, allow_nan=False),
    z0=st.floats(-1e6, 1e6, allow_nan=False),
)
def test_op_is_a_bounded_score(z, z0):
    op = optimality_preservation(z, z0)
    assert 0.0 <= op <= 1.0
    assert (op == 1.0) == (abs(z - z0) <= 1e-9 or (abs(z0) > 1e-9 and abs(z - z0) == 0))


@settings(max_examples=40, deadline=None)
@given(
    lower=st.one_of(st.just(-math.inf), st.floats(-1e3, 1e3)),
    width=st.one_of(st.just(math.inf), st.floats(0, 1e3)),
)
def test_edits_survive_json(lower, width):
    upper = math.inf if math.isinf(width) else lower + width
    edit = Edit("set_row_bounds", row="r0", lower=lower, upper=upper)
    assert Edit.from_dict(json.loads(json.dumps(edit.to_dict()))) == edit
