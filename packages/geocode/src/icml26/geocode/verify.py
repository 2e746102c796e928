"""Verification stages and fault injection (paper §3.2–3.3, App. C).

The stages run in the paper's order; the first that fails rejects the candidate with
its reason:

1. **semantic** — predicates re-derived from the IR's coordinates agree with the seed
   (each construction's defining relation to 1e-6), every given the question needs is
   annotated with the value the figure shows, the target angle's points and arms are
   drawn, the question leaks no given, and the exact answer equals the angle measured
   in the IR. [substitute] The paper's validator is the same LLM as its authors.
2. **coordinate** — residuals below 1e-9 and non-degeneracy: finite coordinates, no
   coincident points, no sliver triangle or near-parallel lines among a construction's
   inputs, every point inside the view.
3. **execution** — the IR parses strictly and the interpreter renders it.
4. **visual** — on the layout of the rendered figure (``shapely``): labels do not
   overlap each other or a given's text, given texts do not touch a drawn segment, and
   the image is not blank.

:func:`inject` corrupts a candidate with one fault of a known type (wrong annotation,
imprecise coordinates, broken IR, overlapping labels); each is aimed at one stage.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from icml26.geocode.dsl import measure_angle, residuals
from icml26.geocode.instantiate import Instance
from icml26.geocode.ir import (
    GIVEN_BOX,
    LABEL_BOX,
    annotation_anchor,
    compile_ir,
    interpret,
    parse_ir,
    png_to_array,
    read_points_leniently,
    render_png,
)

__all__ = [
    "FAULTS",
    "STAGES",
    "Candidate",
    "Verdict",
    "inject",
    "make_candidate",
    "verify",
]

STAGES = ("semantic", "coordinate", "execution", "visual")
# fault type -> the stage that must catch it
FAULTS = {
    "wrong_annotation": "semantic",
    "imprecise_coordinates": "coordinate",
    "broken_ir": "execution",
    "overlapping_labels": "visual",
}
SEMANTIC_TOL = 1e-6
COORD_TOL = 1e-9
MIN_SEPARATION = 0.03  # of the view's side
MIN_ANGLE = 8.0  # degrees, inside a construction's input triangle and between lines


@dataclass(frozen=True)
class Candidate:
    """A realised problem before verification: the instance and its IR text."""

    instance: Instance
    ir_text: str
    size_px: int = 64
    fault: str | None = None


@dataclass(frozen=True)
class Verdict:
    stage: str | None  # the rejecting stage; None when every stage passed
    reason: str
    png: bytes | None = None

    @property
    def passed(self) -> bool:
        return self.stage is None


def make_candidate(instance: Instance, *, size_px: int = 64) -> Candidate:
    seed = instance.seed
    ir = compile_ir(seed.program, instance.coords, seed.givens)
    return Candidate(instance, ir.text, size_px)


# -- stages ------------------------------------------------------------------------------
def _scale(pts: dict[str, np.ndarray], base: tuple[str, ...]) -> float:
    tri = np.array([pts[n] for n in base])
    return float(np.ptp(tri, axis=0).max())


def _rest(vertex: str, base: tuple[str, str, str]) -> tuple[str, str]:
    a, b, c = base
    return {a: (b, c), b: (c, a), c: (a, b)}[vertex]


def semantic(c: Candidate) -> str | None:
    inst, seed = c.instance, c.instance.seed
    pts, angles = read_points_leniently(c.ir_text)
    missing = [n for n in seed.program.points if n not in pts]
    if missing:
        return f"points {missing} are not in the IR"
    scale = _scale(pts, seed.program.base)
    for step in seed.program.steps:
        res = residuals(step, pts, scale)
        worst = max((abs(r) for r in res), default=0.0)
        if worst > SEMANTIC_TOL:  # NaN compares False: degeneracy is the next stage's
            return f"relation of '{step.text}' does not hold in the IR (residual {worst:.2g})"
    base = seed.program.base
    for vertex, degrees in seed.givens:
        u, w = _rest(vertex, base)
        found = [o for o in angles if o.names[1] == vertex and set(o.names) == {u, vertex, w}]
        if not found:
            return f"the given angle at {vertex} is not annotated"
        if any(o.values[0] != degrees for o in found):
            return f"the annotation at {vertex} does not state the given {degrees}°"
        shown = measure_angle(pts, (u, vertex, w))
        if abs(shown - found[0].values[0]) > 0.5:
            return f"the annotation at {vertex} says {found[0].values[0]:g}° but shows {shown:.2f}°"
    segs = set()
    for line in c.ir_text.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "SEG":
            segs.add(frozenset(parts[1:]))
    t0, t1, t2 = seed.target
    for arm in ((t0, t1), (t1, t2)):
        if frozenset(arm) not in segs and not _on_drawn_line(arm, segs, pts):
            return f"arm {''.join(arm)} of the target angle is not drawn"
    if re.search(r"\d", inst.question):
        return "the question text leaks a number"
    measured = measure_angle(pts, seed.target)
    if np.isfinite(measured) and abs(measured - inst.answer_value) > SEMANTIC_TOL * 180:
        return f"exact answer {inst.answer}° disagrees with the figure ({measured:.6f}°)"
    return None


def _on_drawn_line(arm, segs, pts) -> bool:
    """An arm counts as drawn when a drawn segment through its vertex covers it."""
    a, v = arm[0], arm[1]
    for s in segs:
        if v in s:
            (other,) = s - {v} if len(s) == 2 else (None,)
            if other is None or other == a:
                continue
            u, w = pts[other] - pts[v], pts[a] - pts[v]
            cross = u[0] * w[1] - u[1] * w[0]
            if abs(cross) < 1e-9 * (np.hypot(*u) * np.hypot(*w)) and u @ w > 0:
                return True
    return False


def _min_angle(p: np.ndarray, q: np.ndarray, r: np.ndarray) -> float:
    return min(measure_angle({"a": p, "b": q, "c": r}, t) for t in ("bac", "abc", "acb"))


def coordinate(c: Candidate) -> str | None:
    seed = c.instance.seed
    pts, angles = read_points_leniently(c.ir_text)
    names = seed.program.points
    for n in names:
        if not np.all(np.isfinite(pts[n])):
            return f"degenerate: point {n} has no finite position"
    scale = _scale(pts, seed.program.base)
    ir_view = _view_of(c.ir_text)
    side = ir_view[2] - ir_view[0]
    for step in seed.program.steps:
        if step.kind in ("foot", "bisector", "circumcenter", "incenter", "centroid"):
            tri = [pts[a] for a in step.args]
            if _min_angle(*tri) < MIN_ANGLE:
                return f"degenerate: the inputs of '{step.text}' are nearly collinear"
        if step.kind == "intersect":
            p, q, r, s = (pts[a] for a in step.args)
            u, v = q - p, s - r
            ang = np.degrees(abs(np.arctan2(u[0] * v[1] - u[1] * v[0], u @ v)))
            if min(ang, 180 - ang) < MIN_ANGLE:
                return f"degenerate: the lines of '{step.text}' are nearly parallel"
        res = residuals(step, pts, scale)
        worst = max((abs(r) for r in res), default=0.0)
        if not worst <= COORD_TOL:
            return f"residual {worst:.2g} of '{step.text}' exceeds {COORD_TOL:g}"
    for o in angles:
        shown = measure_angle(pts, o.names)
        if not abs(shown - o.values[0]) <= COORD_TOL * 180:
            return f"annotation {o.line} is off by {shown - o.values[0]:.2g}°"
    arr = np.array([pts[n] for n in names])
    d = np.hypot(*(arr[:, None, :] - arr[None, :, :]).transpose(2, 0, 1))
    d[np.diag_indices(len(names))] = np.inf
    i, j = np.unravel_index(np.argmin(d), d.shape)
    if d[i, j] < MIN_SEPARATION * side:
        return f"degenerate: points {names[i]} and {names[j]} (nearly) coincide"
    x0, y0, x1, y1 = ir_view
    for n in names:
        x, y = pts[n]
        if not (x0 < x < x1 and y0 < y < y1):
            return f"point {n} lies outside the figure"
    t = measure_angle(pts, seed.target)
    if t < MIN_ANGLE:
        return f"degenerate: the target angle is only {t:.2f}°"
    return None


def _view_of(text: str) -> tuple[float, float, float, float]:
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] == "VIEW" and len(parts) == 5:
            v = [float(x) for x in parts[1:]]
            return (v[0], v[1], v[2], v[3])
    raise ValueError("no VIEW line")


def execution(c: Candidate) -> str | None:
    """The IR parses strictly and runs in the interpreter (a display list, no raster)."""
    dl = interpret(parse_ir(c.ir_text))
    if not dl.strokes:
        return "the IR draws nothing"
    return None


def _box(x: float, y: float, hw: float, hh: float):
    from shapely.geometry import box

    return box(x - hw, y - hh, x + hw, y + hh)


def visual(c: Candidate) -> str | None:
    from shapely.geometry import LineString

    ir = parse_ir(c.ir_text)
    side = ir.view[2] - ir.view[0]
    lw, lh = LABEL_BOX
    gw, gh = GIVEN_BOX
    labels = [(o.names[0], _box(o.values[0], o.values[1], lw * side, lh * side))
              for o in ir.of("LABEL")]  # fmt: skip
    givens = [(o, _box(*annotation_anchor(ir, o), gw * side, gh * side)) for o in ir.of("ANGLE")]
    for i in range(len(labels)):
        for j in range(i + 1, len(labels)):
            if labels[i][1].intersects(labels[j][1]):
                return f"labels {labels[i][0]} and {labels[j][0]} overlap"
    pts = ir.points
    segs = [LineString([pts[a], pts[b]]) for a, b in (o.names for o in ir.of("SEG"))]
    for o, g in givens:
        for name, lab in labels:
            if g.intersects(lab):
                return f"the given at {o.names[1]} overlaps label {name}"
        if any(g.intersects(s) for s in segs):
            return f"the given at {o.names[1]} is crossed by a segment"
    for a, b in itertools.pairwise(givens):
        if a[1].intersects(b[1]):
            return "two givens overlap"
    return None


def verify(c: Candidate) -> Verdict:
    """Run the stages in order; the first failure rejects (errors become rejections)."""
    checks: list[tuple[str, Callable[[Candidate], str | None]]] = [
        ("semantic", semantic),
        ("coordinate", coordinate),
    ]
    for stage, fn in checks:
        try:
            why = fn(c)
        except Exception as err:  # a numerical failure is this stage's rejection
            why = f"{type(err).__name__}: {err}"
        if why is not None:
            return Verdict(stage, why)
    checks = [("execution", execution), ("visual", visual)]
    for stage, fn in checks:
        try:
            why = fn(c)
        except Exception as err:  # an interpreter failure is a rejection, never a crash
            why = f"{type(err).__name__}: {err}"
        if why is not None:
            return Verdict(stage, why)
    # deterministic rendering of the verified IR; a blank raster is a visual failure
    try:
        png = render_png(c.ir_text, size_px=c.size_px)
    except Exception as err:
        return Verdict("execution", f"rendering failed: {type(err).__name__}: {err}")
    if int(png_to_array(png).max()) < 128:
        return Verdict("visual", "the rendered image is blank")
    return Verdict(None, "verified", png)


# -- fault injection ---------------------------------------------------------------------
def inject(c: Candidate, fault: str, rng: np.random.Generator) -> Candidate:
    """``c`` with one fault of type ``fault`` (see :data:`FAULTS`)."""
    if fault not in FAULTS:
        raise ValueError(f"unknown fault {fault!r}; known: {sorted(FAULTS)}")
    lines = c.ir_text.splitlines()
    seed = c.instance.seed
    if fault == "wrong_annotation":
        idx = [i for i, ln in enumerate(lines) if ln.startswith("ANGLE ")]
        i = int(rng.choice(idx))
        parts = lines[i].split()
        parts[4] = str(int(parts[4]) + int(rng.choice([-20, -10, 10, 20])))
        lines[i] = " ".join(parts)
    elif fault == "imprecise_coordinates":
        coords = dict(c.instance.coords)
        movable = [s.out for s in seed.program.steps if s.out is not None] or [seed.program.base[2]]
        name = str(rng.choice(movable))
        scale = _scale(coords, seed.program.base)
        theta = rng.uniform(0, 2 * np.pi)
        coords[name] = coords[name] + 5e-8 * scale * np.array([np.cos(theta), np.sin(theta)])
        ir = compile_ir(seed.program, coords, seed.givens)
        lines = ir.text.splitlines()
    elif fault == "broken_ir":
        idx = [i for i, ln in enumerate(lines) if ln.split()[0] in ("LABEL", "RIGHT", "TICKS",
               "ARCS", "PAR", "CIRCLE")]  # fmt: skip
        i = int(rng.choice(idx))
        parts = lines[i].split()
        if parts[0] in ("LABEL", "CIRCLE") and rng.random() < 0.5:
            parts[-1] = "x" + parts[-1]  # a malformed number
        else:
            parts[1] = "Z9"  # an undefined point
        lines[i] = " ".join(parts)
    elif fault == "overlapping_labels":
        idx = [i for i, ln in enumerate(lines) if ln.startswith("LABEL ")]
        i, j = (int(v) for v in rng.choice(idx, size=2, replace=False))
        a, b = lines[i].split(), lines[j].split()
        lines[i] = " ".join([a[0], a[1], b[2], b[3]])
    return replace(c, ir_text="\n".join(lines) + "\n", fault=fault)


def reverify(ir_text: str, instance: Instance, size_px: int) -> Verdict:
    """Verify a stored problem again from its IR text."""
    return verify(Candidate(instance, ir_text, size_px))
