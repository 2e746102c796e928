"""Verification stages: faults caught by their stage, degeneracy rejected with a reason."""

from __future__ import annotations

import numpy as np
import pytest

from icml26.geocode.dataset import problem_instance, reverify
from icml26.geocode.dsl import parse_program
from icml26.geocode.instantiate import instantiate
from icml26.geocode.seeds import Seed
from icml26.geocode.verify import FAULTS, Candidate, inject, make_candidate, verify


def test_retained_problems_reverify(problems):
    assert all(reverify(p).passed for p in problems)


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_every_injected_fault_is_caught_by_its_stage(problems, fault):
    for k, p in enumerate(problems):
        cand = Candidate(problem_instance(p), p.ir, 64)
        bad = inject(cand, fault, np.random.default_rng(k))
        verdict = verify(bad)
        assert verdict.stage == FAULTS[fault], (fault, verdict)


def test_degenerate_instance_is_rejected_with_a_reason():
    # a foot from C onto AB taken from D = midpoint of AB, then the midpoint of D, D':
    # 'intersect' of two parallel lines has no finite point
    prog = parse_program(
        "triangle A B C\nmidpoint D A B\nmidpoint E A C\nintersect F D E B C\nsegment F A"
    )
    seed = Seed(prog, "angle_sum", ("A", "B", "C"), (("A", 50), ("B", 60)), ("A", "C", "B"),
                "geocode", "angle_sum|x")  # fmt: skip
    inst = instantiate(seed, np.random.default_rng(0))
    verdict = verify(make_candidate(inst))
    assert verdict.stage == "coordinate"
    assert "degenerate" in verdict.reason or "outside" in verdict.reason


def test_interpreter_failures_become_rejections_not_crashes(problems):
    p = problems[0]
    cand = Candidate(problem_instance(p), p.ir.replace("VIEW", "VIEW 0", 1), 64)
    verdict = verify(cand)
    assert not verdict.passed and verdict.reason
