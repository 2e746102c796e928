import pytest

from icml26.orloop import (
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
