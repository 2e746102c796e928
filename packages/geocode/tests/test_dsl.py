"""Constructions satisfy their defining relations; programs and errors."""

from __future__ import annotations

import numpy as np
import pytest

from icml26.geocode.dsl import (
    TEMPLATES,
    Construction,
    base_triangle,
    construct,
    parse_program,
    residuals,
)

KINDS_ARGS = {
    "midpoint": ("A", "B"),
    "foot": ("C", "A", "B"),
    "bisector": ("A", "B", "C"),
    "circumcenter": ("A", "B", "C"),
    "incenter": ("A", "B", "C"),
    "centroid": ("A", "B", "C"),
    "intersect": ("A", "D", "B", "C"),
    "parallel": ("A", "B", "C"),
    "tangent": ("C", "A", "B"),  # from C to the circle about A through B (|AC| > |AB|)
}


@pytest.mark.parametrize("kind", sorted(KINDS_ARGS))
def test_each_construction_satisfies_its_defining_relation(kind):
    pts = base_triangle(50, 70)
    pts["D"] = np.array([0.7, 0.9])
    step = Construction(kind, "X", KINDS_ARGS[kind])
    pts["X"] = construct(step, pts)
    assert max(abs(r) for r in residuals(step, pts)) < 1e-12
    # moving the point breaks the relation: the residuals can fail
    pts["X"] = pts["X"] + np.array([1e-3, -2e-3])
    assert max(abs(r) for r in residuals(step, pts)) > 1e-5


def test_tangent_touches_the_circle_and_rejects_an_inside_point():
    from icml26.geocode.dsl import Program
    from icml26.geocode.ir import compile_ir, parse_ir, render_png

    pts = base_triangle(50, 70)  # |AC| > |AB| = 1
    step = Construction("tangent", "D", ("C", "A", "B"))
    pts["D"] = construct(step, pts)
    radius = np.hypot(*pts["D"] - pts["A"])
    assert abs(radius - 1.0) < 1e-12  # on the circle, and OD ⟂ CD
    assert abs(float((pts["D"] - pts["A"]) @ (pts["D"] - pts["C"]))) < 1e-12
    ir = compile_ir(Program((step,)), pts, (("A", 50), ("B", 70)))
    ops = {o.op for o in parse_ir(ir.text).ops}
    assert {"CIRCLE", "RIGHT"} <= ops and render_png(ir.text, size_px=32)
    inside = Construction("tangent", "E", ("B", "A", "C"))  # |AB| < |AC|: B is inside
    assert not np.all(np.isfinite(construct(inside, pts)))
    assert parse_program("triangle A B C\ntangent D C A B").steps == (step,)


def test_both_derivations_of_each_template_agree():
    from icml26.geocode.instantiate import instantiate, measured_answer
    from icml26.geocode.seeds import sample_program, select_seed

    rng = np.random.default_rng(0)
    seen = set()
    while len(seen) < len(TEMPLATES):
        s = sample_program(rng, "textbook")
        if select_seed(s) is not None:
            continue
        inst = instantiate(s, rng)
        exact = inst.answer_value
        assert abs(measured_answer(inst.coords, s.target) - exact) < 1e-7, s.template
        seen.add(s.template)


def test_program_text_roundtrip_and_clear_errors():
    prog = parse_program("triangle A B C\nmidpoint D A B\nfoot E C A D\nsegment E B\n")
    assert parse_program(prog.text) == prog
    assert prog.depth == 2
    with pytest.raises(ValueError, match="unknown construction 'tangentx'"):
        parse_program("triangle A B C\ntangentx D A B")
    with pytest.raises(ValueError, match="undefined point 'Q'"):
        parse_program("triangle A B C\nmidpoint D A Q")
    with pytest.raises(ValueError, match="line 2"):
        parse_program("triangle A B C\nfoot D A B")
