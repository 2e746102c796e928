"""An AlphaGeometry-style construction language: programs as data, proof-seed templates.

A :class:`Program` is a base triangle ``A B C`` followed by :class:`Construction` steps,
each defining one new point from earlier ones (``midpoint D A B``, ``foot E C A B`` ...)
or drawing a segment (``segment D B``). The text form is one construction per line::

    triangle A B C
    bisector D A B C
    foot E D A B

Every construction has a *defining relation* (:func:`residuals`): numbers that are zero
exactly when the coordinates satisfy it. The verification stages re-derive these
relations from the plotting IR's coordinates.

A :class:`ProofTemplate` is the proof seed of the paper (§3.1): it fixes the target
(an angle named by three role points), the constructions it needs and the derivation
of its value from the triangle's angles, exactly in sympy (degrees). Roles ``P Q R``
are a permutation of the triangle's vertices; ``X`` and ``Y`` are the points the
template constructs. [substitute] The paper's symbolic predicates come from an LLM
Instructor; these templates are a fixed, hand-written set of textbook angle facts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import sympy as sp

__all__ = [
    "ARITY",
    "KINDS",
    "TEMPLATES",
    "Construction",
    "Program",
    "ProofTemplate",
    "construct",
    "parse_program",
    "residuals",
]

# kind -> number of input points (the output point is named first)
ARITY: dict[str, int] = {
    "midpoint": 2,  # midpoint X P Q
    "foot": 3,  # foot X P Q R: foot of the perpendicular from P onto line QR
    "bisector": 3,  # bisector X P Q R: the bisector of ∠QPR meets QR at X
    "circumcenter": 3,  # circumcenter X P Q R (the circumcircle is drawn)
    "incenter": 3,  # incenter X P Q R (the incircle is drawn)
    "centroid": 3,  # centroid X P Q R
    "intersect": 4,  # intersect X P Q R S: line PQ ∩ line RS
    "parallel": 3,  # parallel X P Q R: PX ∥ QR and |PX| = |QR| (a parallelogram vertex)
    # tangent X P O Q: PX touches the circle about O through Q at X (the touching point
    # counter-clockwise of OP; the circle is drawn); P inside the circle: no point
    "tangent": 3,
    "segment": 2,  # segment P Q: draw only, defines no point
}
KINDS = tuple(ARITY)
_NAME = re.compile(r"[A-Z][0-9]?")


@dataclass(frozen=True)
class Construction:
    """One step: ``kind`` applied to ``args`` defines the point ``out`` (None for ``segment``)."""

    kind: str
    out: str | None
    args: tuple[str, ...]

    def __post_init__(self) -> None:
        if self.kind not in ARITY:
            raise ValueError(f"unknown construction {self.kind!r}; known: {', '.join(KINDS)}")
        if len(self.args) != ARITY[self.kind]:
            raise ValueError(
                f"{self.kind} takes {ARITY[self.kind]} points, got {len(self.args)}: {self.args}"
            )
        if (self.kind == "segment") != (self.out is None):
            raise ValueError(f"{self.kind}: only 'segment' defines no point")

    @property
    def text(self) -> str:
        head = [self.kind] + ([self.out] if self.out else [])
        return " ".join([*head, *self.args])


@dataclass(frozen=True)
class Program:
    """A base triangle and the constructions that follow it (names must be defined first)."""

    steps: tuple[Construction, ...]
    base: tuple[str, str, str] = ("A", "B", "C")

    def __post_init__(self) -> None:
        defined = set(self.base)
        if len(defined) != 3:
            raise ValueError(f"the base triangle needs three distinct names, got {self.base}")
        for i, step in enumerate(self.steps, start=1):
            for name in step.args:
                if name not in defined:
                    raise ValueError(
                        f"step {i} ({step.text}) refers to the undefined point {name!r}; "
                        f"defined so far: {', '.join(sorted(defined))}"
                    )
            if len(set(step.args)) != len(step.args):
                raise ValueError(f"step {i} ({step.text}) repeats a point")
            if step.out is not None:
                if step.out in defined:
                    raise ValueError(f"step {i} ({step.text}) redefines {step.out!r}")
                defined.add(step.out)

    @property
    def points(self) -> list[str]:
        return [*self.base, *(s.out for s in self.steps if s.out is not None)]

    @property
    def text(self) -> str:
        return "\n".join([f"triangle {' '.join(self.base)}", *(s.text for s in self.steps)])

    @property
    def depth(self) -> int:
        """Longest chain of constructions (a base vertex has depth 0)."""
        d = dict.fromkeys(self.base, 0)
        best = 0
        for s in self.steps:
            if s.out is not None:
                d[s.out] = 1 + max(d[a] for a in s.args)
                best = max(best, d[s.out])
        return best


def parse_program(text: str) -> Program:
    """The text form back into a :class:`Program`; errors name the line."""
    base: tuple[str, str, str] | None = None
    steps: list[Construction] = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        kind, *names = line.split()
        bad = [n for n in names if not _NAME.fullmatch(n)]
        if bad:
            raise ValueError(f"line {lineno}: {raw.strip()!r}: bad point name(s) {bad}")
        if kind == "triangle":
            if base is not None or steps or len(names) != 3:
                raise ValueError(f"line {lineno}: 'triangle' must come first with three names")
            base = (names[0], names[1], names[2])
            continue
        if base is None:
            raise ValueError(f"line {lineno}: the program must start with 'triangle A B C'")
        if kind not in ARITY:
            raise ValueError(
                f"line {lineno}: unknown construction {kind!r}; known: {', '.join(KINDS)}"
            )
        out = None if kind == "segment" else (names[0] if names else None)
        args = tuple(names if kind == "segment" else names[1:])
        try:
            steps.append(Construction(kind, out, args))
        except ValueError as err:
            raise ValueError(f"line {lineno}: {err}") from None
    if base is None:
        raise ValueError("empty program: expected 'triangle A B C' first")
    try:
        return Program(tuple(steps), base)
    except ValueError as err:
        raise ValueError(f"program: {err}") from None


# -- numerics --------------------------------------------------------------------------
def _cross(u: np.ndarray, v: np.ndarray) -> float:
    # A point at infinity (two parallel lines intersected) makes this NaN on purpose:
    # the coordinate stage rejects non-finite residuals as degenerate, with a reason,
    # so numpy's RuntimeWarning would only repeat what the rejection already says.
    with np.errstate(invalid="ignore", over="ignore"):
        return float(u[0] * v[1] - u[1] * v[0])


def _angle(p: np.ndarray, vertex: np.ndarray, q: np.ndarray) -> float:
    """∠p vertex q in degrees, in [0, 180]."""
    u, v = p - vertex, q - vertex
    return float(np.degrees(np.arctan2(abs(_cross(u, v)), float(u @ v))))


def _line_dist(x: np.ndarray, p: np.ndarray, q: np.ndarray) -> float:
    d = q - p
    return abs(_cross(x - p, d)) / float(np.hypot(*d))


def construct(step: Construction, pts: Mapping[str, np.ndarray]) -> np.ndarray | None:
    """The coordinates of the point ``step`` defines (None for ``segment``).

    Degenerate inputs (parallel lines, coincident points) give non-finite coordinates,
    which the coordinate stage rejects with a reason.
    """
    a = [np.asarray(pts[n], dtype=float) for n in step.args]
    k = step.kind
    with np.errstate(all="ignore"):
        if k == "segment":
            return None
        if k == "midpoint":
            return (a[0] + a[1]) / 2
        if k == "foot":
            p, q, r = a
            d = r - q
            return q + d * float((p - q) @ d) / float(d @ d)
        if k == "bisector":
            p, q, r = a
            lq, lr = np.hypot(*(q - p)), np.hypot(*(r - p))
            return (q * lr + r * lq) / (lq + lr)  # divides QR in the ratio PQ : PR
        if k == "circumcenter":
            p, q, r = a
            d = 2 * (p[0] * (q[1] - r[1]) + q[0] * (r[1] - p[1]) + r[0] * (p[1] - q[1]))
            sp2, sq2, sr2 = p @ p, q @ q, r @ r
            ux = (sp2 * (q[1] - r[1]) + sq2 * (r[1] - p[1]) + sr2 * (p[1] - q[1])) / d
            uy = (sp2 * (r[0] - q[0]) + sq2 * (p[0] - r[0]) + sr2 * (q[0] - p[0])) / d
            return np.array([ux, uy])
        if k == "incenter":
            p, q, r = a
            la, lb, lc = np.hypot(*(q - r)), np.hypot(*(p - r)), np.hypot(*(p - q))
            return (la * p + lb * q + lc * r) / (la + lb + lc)
        if k == "centroid":
            return (a[0] + a[1] + a[2]) / 3
        if k == "intersect":
            p, q, r, s = a
            d1, d2 = q - p, s - r
            den = _cross(d1, d2)
            t = _cross(r - p, d2) / den if den != 0 else np.inf
            return p + t * d1
        if k == "parallel":
            p, q, r = a
            return p + (r - q)
        if k == "tangent":
            p, o, q = a
            radius, d = float(np.hypot(*(q - o))), float(np.hypot(*(p - o)))
            if not d > radius:  # P on or inside the circle: no tangent from it
                return np.full(2, np.nan)
            th = np.arccos(radius / d)
            u = (p - o) / d
            turned = np.array([np.cos(th) * u[0] - np.sin(th) * u[1],
                               np.sin(th) * u[0] + np.cos(th) * u[1]])  # fmt: skip
            return o + radius * turned
    raise ValueError(f"unknown construction {k!r}")  # pragma: no cover - Construction checks


def residuals(step: Construction, pts: Mapping[str, np.ndarray], scale: float = 1.0) -> list[float]:
    """The defining relation of ``step`` as residuals (zero when it holds), relative to ``scale``.

    These are re-derived relations (perpendicularity, equal distances, collinearity,
    equal angles), not a recomputation of the construction formula.
    """
    k = step.kind
    if k == "segment":
        return []
    x = np.asarray(pts[step.out], dtype=float)
    a = [np.asarray(pts[n], dtype=float) for n in step.args]
    s, s2 = scale, scale * scale
    if k == "midpoint":
        p, q = a
        return [_cross(x - p, q - p) / s2, (np.hypot(*(x - p)) - np.hypot(*(x - q))) / s]
    if k == "foot":
        p, q, r = a
        return [_cross(x - q, r - q) / s2, float((x - p) @ (r - q)) / s2]
    if k == "bisector":
        p, q, r = a
        return [_cross(x - q, r - q) / s2, (_angle(q, p, x) - _angle(x, p, r)) / 180.0]
    if k == "circumcenter":
        p, q, r = a
        dp, dq, dr = (np.hypot(*(x - v)) for v in (p, q, r))
        return [(dp - dq) / s, (dp - dr) / s]
    if k == "incenter":
        p, q, r = a
        d1, d2, d3 = _line_dist(x, p, q), _line_dist(x, q, r), _line_dist(x, p, r)
        return [(d1 - d2) / s, (d1 - d3) / s]
    if k == "centroid":
        p, q, r = a
        return [float(v) / s for v in (3 * x - p - q - r)]
    if k == "intersect":
        p, q, r, t = a
        return [_cross(x - p, q - p) / s2, _cross(x - r, t - r) / s2]
    if k == "parallel":
        p, q, r = a
        return [_cross(x - p, r - q) / s2, (np.hypot(*(x - p)) - np.hypot(*(r - q))) / s]
    if k == "tangent":  # OX ⟂ PX and X on the circle
        p, o, q = a
        return [float((x - o) @ (x - p)) / s2, (np.hypot(*(x - o)) - np.hypot(*(q - o))) / s]
    raise ValueError(f"unknown construction {k!r}")  # pragma: no cover


def base_triangle(angle_a: float, angle_b: float) -> dict[str, np.ndarray]:
    """Triangle A B C with ∠A, ∠B in degrees: A = (0, 0), B = (1, 0) (law of sines)."""
    alpha, beta = np.radians(angle_a), np.radians(angle_b)
    gamma = np.pi - alpha - beta
    side_ac = np.sin(beta) / np.sin(gamma)
    return {
        "A": np.array([0.0, 0.0]),
        "B": np.array([1.0, 0.0]),
        "C": side_ac * np.array([np.cos(alpha), np.sin(alpha)]),
    }


def well_posed(
    step: Construction,
    pts: Mapping[str, np.ndarray],
    min_angle: float,
    min_sep: float,
    radius: float,
) -> bool:
    """Whether ``step`` is numerically safe on ``pts``: inputs not near collinear, the new
    point finite, apart from the others by ``min_sep`` and within ``radius`` of the origin."""
    a = [np.asarray(pts[n], dtype=float) for n in step.args]
    if step.kind in ("foot", "bisector", "circumcenter", "incenter", "centroid", "parallel"):
        p, q, r = a
        if min(_angle(q, p, r), _angle(p, q, r), _angle(p, r, q)) < min_angle:
            return False
    if step.kind == "intersect":
        u, v = a[1] - a[0], a[3] - a[2]
        ang = _angle(u, np.zeros(2), v)
        if min(ang, 180 - ang) < min_angle:
            return False
    with np.errstate(all="ignore"):
        x = construct(step, pts)
    if x is None:
        return True
    if not np.all(np.isfinite(x)) or float(np.hypot(*x)) > radius:
        return False
    return all(float(np.hypot(*(x - v))) >= min_sep for v in pts.values())


def measure_angle(pts: Mapping[str, np.ndarray], names: Sequence[str]) -> float:
    """∠(names[0] names[1] names[2]) in degrees from coordinates."""
    p, v, q = (np.asarray(pts[n], dtype=float) for n in names)
    return _angle(p, v, q)


# -- proof seeds -----------------------------------------------------------------------
ALPHA, BETA, GAMMA = sp.symbols("alpha beta gamma", positive=True)


@dataclass(frozen=True)
class ProofTemplate:
    """A proof seed: constructions over roles, the target angle and its derivation.

    ``steps`` use the role names ``P Q R`` (a permutation of the triangle) and the new
    points ``X Y``; ``target`` names the angle asked for; ``formula`` is its value in
    degrees in terms of ∠P = α, ∠Q = β, ∠R = γ; ``trace`` is the derivation as text with
    ``{α}``-style placeholders; ``requires`` holds on the angles for the formula to apply.
    """

    name: str
    steps: tuple[tuple[str, ...], ...]
    target: tuple[str, str, str]
    formula: sp.Expr
    trace: tuple[str, ...]
    requires: Callable[[float, float, float], bool] = field(default=lambda a, b, c: True)
    permute: bool = True  # False: the roles are fixed to (A, B, C)

    def value(self, alpha: sp.Expr, beta: sp.Expr, gamma: sp.Expr) -> sp.Expr:
        return sp.nsimplify(self.formula.subs({ALPHA: alpha, BETA: beta, GAMMA: gamma}))


def _acute(a: float, b: float, c: float) -> bool:
    return max(a, b, c) < 90


TEMPLATES: dict[str, ProofTemplate] = {
    t.name: t
    for t in (
        ProofTemplate(
            "angle_sum",
            (),
            ("P", "R", "Q"),
            180 - ALPHA - BETA,
            ("∠R = 180° − ∠P − ∠Q (angle sum of a triangle)",),
            permute=False,
        ),
        ProofTemplate(
            "bisector",
            (("bisector", "X", "P", "Q", "R"),),
            ("P", "X", "R"),
            180 - ALPHA / 2 - GAMMA,
            (
                "PX bisects ∠P, so ∠XPR = ∠P / 2",
                "in triangle PXR: ∠PXR = 180° − ∠XPR − ∠R",
            ),
        ),
        ProofTemplate(
            "altitude",
            (("foot", "X", "P", "Q", "R"),),
            ("Q", "P", "X"),
            90 - BETA,
            ("PX ⟂ QR, so ∠PXQ = 90°", "in triangle PXQ: ∠QPX = 90° − ∠Q"),
            requires=lambda a, b, c: b < 90 and c < 90,
        ),
        ProofTemplate(
            "circumcenter",
            (("circumcenter", "X", "P", "Q", "R"), ("segment", "X", "Q"), ("segment", "X", "R")),
            ("Q", "X", "R"),
            2 * ALPHA,
            ("X is the circumcentre: the central angle ∠QXR is twice the inscribed ∠P",),
            requires=_acute,
        ),
        ProofTemplate(
            "circum_base",
            (("circumcenter", "X", "P", "Q", "R"), ("segment", "X", "Q"), ("segment", "X", "R")),
            ("X", "Q", "R"),
            90 - ALPHA,
            (
                "∠QXR = 2∠P (central angle)",
                "XQ = XR, so ∠XQR = (180° − ∠QXR) / 2 = 90° − ∠P",
            ),
            requires=_acute,
        ),
        ProofTemplate(
            "incenter",
            (("incenter", "X", "P", "Q", "R"), ("segment", "X", "Q"), ("segment", "X", "R")),
            ("Q", "X", "R"),
            90 + ALPHA / 2,
            (
                "QX, RX bisect ∠Q and ∠R",
                "∠QXR = 180° − (∠Q + ∠R) / 2 = 90° + ∠P / 2",
            ),
        ),
        ProofTemplate(
            "bisector_foot",
            (("bisector", "X", "P", "Q", "R"), ("foot", "Y", "X", "P", "Q")),
            ("P", "X", "Y"),
            90 - ALPHA / 2,
            ("∠XPY = ∠P / 2 (bisector)", "XY ⟂ PQ, so ∠PXY = 90° − ∠P / 2"),
            requires=lambda a, b, c: b < 90,
        ),
        ProofTemplate(
            "altitude_bisector",
            (("foot", "X", "P", "Q", "R"), ("bisector", "Y", "P", "Q", "R")),
            ("X", "P", "Y"),
            sp.Abs(BETA - GAMMA) / 2,
            (
                "∠QPX = 90° − ∠Q (altitude), ∠QPY = ∠P / 2 (bisector)",
                "∠XPY = |∠QPY − ∠QPX| = |∠Q − ∠R| / 2",
            ),
            requires=lambda a, b, c: b < 90 and c < 90 and b != c,
        ),
    )
}
