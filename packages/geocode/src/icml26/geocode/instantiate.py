"""Grounded instantiation: metric, text and answer realisations of a seed (paper §3.2).

- *metric*: coordinates of every point. The base triangle realises the given angles
  exactly (law of sines, AB = 1), under a seeded rotation; constructions follow
  (:func:`icml26.geocode.dsl.construct`).
- *text*: a templated question naming only the target angle. The givens appear only
  as figure annotations, so the question alone does not determine the answer.
- *answer*: the template's derivation evaluated exactly in sympy (degrees) with the
  reasoning steps; :func:`measured_answer` is the second, numerical derivation from
  coordinates, and the semantic stage checks that both agree.

[substitute] The paper's Instructor (GPT-OSS-120B) writes question and reasoning;
here both are templated from the proof seed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy as sp

from icml26.geocode.dsl import Program, base_triangle, construct, measure_angle
from icml26.geocode.seeds import Seed

__all__ = [
    "Instance",
    "caption_text",
    "instantiate",
    "measured_answer",
    "question_text",
    "realise_coordinates",
]

_KIND_TEXT = {
    "midpoint": "{o} is the midpoint of {a}{b}",
    "foot": "{o} is the foot of the perpendicular from {a} to {b}{c}",
    "bisector": "{a}{o} bisects angle {b}{a}{c}",
    "circumcenter": "{o} is the circumcentre of {a}{b}{c}",
    "incenter": "{o} is the incentre of {a}{b}{c}",
    "centroid": "{o} is the centroid of {a}{b}{c}",
    "intersect": "{o} is where lines {a}{b} and {c}{d} meet",
    "parallel": "{a}{o} is parallel and equal to {b}{c}",
    "tangent": "{a}{o} touches the circle about {b} through {c} at {o}",
    "segment": "segment {a}{b} is drawn",
}


@dataclass(frozen=True)
class Instance:
    """A seed grounded: coordinates, question, exact answer and the reasoning steps."""

    seed: Seed
    coords: dict[str, np.ndarray]
    question: str
    answer: sp.Expr
    steps: tuple[str, ...]
    caption: str

    @property
    def answer_value(self) -> float:
        return float(self.answer)


def realise_coordinates(
    program: Program, angles: dict[str, int], rotation_deg: float
) -> dict[str, np.ndarray]:
    """Coordinates of every point: the base triangle with the given angles, then each step."""
    a, b, c = program.base
    tri = base_triangle(angles[a], angles[b])
    base = {a: tri["A"], b: tri["B"], c: tri["C"]}
    t = np.radians(rotation_deg)
    rot = np.array([[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]])
    centre = sum(base.values()) / 3
    pts = {k: rot @ (v - centre) for k, v in base.items()}
    for step in program.steps:
        xy = construct(step, pts)
        if xy is not None and step.out is not None:
            pts[step.out] = xy
    return pts


def question_text(target: tuple[str, str, str]) -> str:
    """The question: only the target angle's name (no given, no construction)."""
    return f"In the figure, find the measure of angle {''.join(target)} in degrees."


def caption_text(seed: Seed) -> str:
    """A templated caption: what each construction is, and the givens (the caption arm)."""
    parts = []
    for s in seed.program.steps:
        if s.kind == "segment":
            continue
        names = dict(zip("abcd", s.args, strict=False))
        parts.append(_KIND_TEXT[s.kind].format(o=s.out, **names))
    parts += [f"angle {v} is {deg} degrees" for v, deg in seed.givens]
    return "; ".join(parts) + "."


def instantiate(seed: Seed, rng: np.random.Generator) -> Instance:
    """Ground ``seed``: coordinates (seeded rotation), question, exact answer, steps."""
    angles = seed.angles
    rotation = float(rng.uniform(-30.0, 30.0))
    coords = realise_coordinates(seed.program, angles, rotation)
    p, q, r = (sp.Integer(angles[v]) for v in seed.roles)
    answer = seed.proof.value(p, q, r)
    if not answer.is_number:
        raise ValueError(f"template {seed.template} left a symbolic answer {answer}")
    names = dict(zip("PQR", seed.roles, strict=True))
    names.update(_template_points(seed))
    steps = tuple(
        _fill(line, names, angles, seed.roles)
        for line in (*seed.proof.trace, f"answer: {sp.nsimplify(answer)}°")
    )
    return Instance(
        seed=seed,
        coords=coords,
        question=question_text(seed.target),
        answer=sp.nsimplify(answer),
        steps=steps,
        caption=caption_text(seed),
    )


def _template_points(seed: Seed) -> dict[str, str]:
    """The real names of the template's X and Y (in the order the template defines them)."""
    roles = dict(zip("PQR", seed.roles, strict=True))
    out: dict[str, str] = {}
    own = [s for s in seed.proof.steps if s[0] != "segment"]
    for kind, *args in own:
        want = tuple(roles.get(a, out.get(a, "?")) for a in args[1:])
        for s in seed.program.steps:
            if s.kind == kind and s.args == want and s.out not in out.values():
                out[args[0]] = s.out or "?"
                break
    return out


def _fill(line: str, names: dict[str, str], angles: dict[str, int], roles: tuple) -> str:
    # rewrite role letters (P, Q, R, X, Y) that stand alone or inside point names
    out = []
    for ch in line:
        out.append(names.get(ch, ch) if ch in "PQRXY" else ch)
    text = "".join(out)
    p, q, r = roles
    return text + f"  [∠{p} = {angles[p]}°, ∠{q} = {angles[q]}°, ∠{r} = {angles[r]}°]"


def measured_answer(coords: dict[str, np.ndarray], target: tuple[str, str, str]) -> float:
    """The target angle measured from coordinates (the second derivation)."""
    return measure_angle(coords, target)
