"""Symbolic seeds: a proof-seed template, its roles, the givens and a chain of constructions.

Two tiers (brief, "Data available offline"): ``textbook`` (1–2 point constructions, like
existing datasets) and ``geocode`` (4–8 chained constructions; distractor constructions
may build on constructed points). A seed's *composition* is its template with the
sorted kinds of its other constructions; compositions are split by a stable hash so
that test problems use compositions never seen in training (held-out templates).

[substitute] The paper samples symbolic programs and keeps seeds with an LLM in the
loop (264,705 programs → 35,297 seeds); here :func:`sample_program` draws a program and
:func:`select_seed` keeps it when the template's preconditions hold, it is not a
duplicate and it falls in the requested split.
"""

from __future__ import annotations

import string
import zlib
from dataclasses import dataclass

import numpy as np

from icml26.geocode.dsl import (
    TEMPLATES,
    Construction,
    Program,
    ProofTemplate,
    base_triangle,
    construct,
    well_posed,
)

__all__ = [
    "DISTRACTOR_KINDS",
    "TIERS",
    "VALUES",
    "Seed",
    "composition_split",
    "sample_program",
    "select_seed",
]

VALUES = (30, 40, 50, 60, 70, 80)  # the given angles ∠A, ∠B in degrees
MIN_THIRD_ANGLE = 30
DISTRACTOR_KINDS = (
    "midpoint",
    "foot",
    "bisector",
    "circumcenter",
    "incenter",
    "centroid",
    "intersect",
    "parallel",
)
# tier -> (min, max) number of point-defining constructions in the whole program
# ("deep", 9-11 constructions, exists for the off-preset depth recheck only)
TIERS: dict[str, tuple[int, int]] = {"textbook": (1, 2), "geocode": (4, 8), "deep": (9, 11)}
SPLITS = ("train", "test", "any")
_NAMES = [c for c in string.ascii_uppercase[3:] if c not in "IOX"] + ["I", "O"]


@dataclass(frozen=True)
class Seed:
    """A symbolic seed: everything a problem is made of before any coordinate exists."""

    program: Program
    template: str
    roles: tuple[str, str, str]  # the vertices playing P, Q, R
    givens: tuple[tuple[str, int], ...]  # (vertex, angle in degrees) shown in the figure
    target: tuple[str, str, str]  # the angle asked for, by point names
    tier: str
    composition: str

    @property
    def angles(self) -> dict[str, int]:
        """All three triangle angles (the third from the angle sum)."""
        g = dict(self.givens)
        a, b, c = self.program.base
        return {a: g[a], b: g[b], c: 180 - g[a] - g[b]}

    @property
    def proof(self) -> ProofTemplate:
        return TEMPLATES[self.template]

    @property
    def n_constructions(self) -> int:
        return sum(1 for s in self.program.steps if s.out is not None)


def composition_split(composition: str, holdout: int = 5) -> str:
    """``"test"`` for one composition in ``holdout`` (a stable hash), else ``"train"``."""
    if holdout < 2:
        raise ValueError(f"holdout must be >= 2, got {holdout}")
    return "test" if zlib.crc32(composition.encode()) % holdout == 0 else "train"


def _pick(rng: np.random.Generator, names: list[str], k: int) -> tuple[str, ...]:
    return tuple(str(n) for n in rng.choice(names, size=k, replace=False))


def sample_program(rng: np.random.Generator, tier: str, template: str | None = None) -> Seed:
    """Draw one symbolic program of ``tier`` (its preconditions are not yet checked)."""
    if tier not in TIERS:
        raise ValueError(f"unknown tier {tier!r}; use one of {sorted(TIERS)}")
    name = template or str(rng.choice(sorted(TEMPLATES)))
    if name not in TEMPLATES:
        raise ValueError(f"unknown template {name!r}; known: {sorted(TEMPLATES)}")
    proof = TEMPLATES[name]
    base = ("A", "B", "C")
    roles = tuple(str(v) for v in rng.permutation(base)) if proof.permute else base
    a, b = (int(v) for v in rng.choice(VALUES, size=2))
    lo, hi = TIERS[tier]
    own = sum(1 for s in proof.steps if s[0] != "segment")
    total = int(rng.integers(max(lo, own), max(hi, own) + 1))
    n_extra = total - own
    insert_at = int(rng.integers(0, n_extra + 1))

    names = iter(_NAMES)
    defined = list(base)
    steps: list[Construction] = []
    role_map = dict(zip(("P", "Q", "R"), roles, strict=True))
    kinds: list[str] = []

    # grounded sampling: the givens fix the shape, so each distractor is drawn until it
    # is numerically well posed (the verification stages use looser thresholds)
    ang_c = 180 - a - b
    if min(a, b, ang_c) <= 0:
        pts = None
    else:
        tri = base_triangle(a, b)
        centre = sum(tri.values()) / 3
        pts = {k: v - centre for k, v in tri.items()}
    lines: list[set[str]] = [{"A", "B"}, {"B", "C"}, {"A", "C"}]

    def on_line(*pts: str) -> bool:
        return any(set(pts) <= ln for ln in lines)

    def record(step: Construction) -> None:
        """Symbolic collinearities the step creates (lines as point sets)."""
        x, a = step.out, step.args
        if step.kind == "segment":
            if not on_line(*a):
                lines.append(set(a))
            return

        def join(p: str, q: str) -> None:
            for ln in lines:
                if p in ln and q in ln:
                    return
            lines.append({p, q})

        def put(line_pts: tuple[str, str]) -> None:
            for ln in lines:
                if set(line_pts) <= ln:
                    ln.add(x)
                    return
            lines.append({*line_pts, x})

        if step.kind == "midpoint":
            put((a[0], a[1]))
        elif step.kind in ("foot", "bisector"):
            put((a[1], a[2]))
            join(a[0], x)
        elif step.kind == "intersect":
            put((a[0], a[1]))
            put((a[2], a[3]))

    def admissible(kind: str, args: tuple[str, ...]) -> bool:
        if kind in ("bisector", "circumcenter", "incenter", "centroid"):
            return not on_line(*args)
        if kind == "foot":
            return not on_line(*args[1:], args[0]) and not on_line(*args)
        if kind == "intersect":
            p, q, r, t = args
            return not (
                on_line(p, q, r) or on_line(p, q, t) or on_line(r, t, p) or on_line(r, t, q)
            )
        if kind == "parallel":
            return not on_line(*args)
        return True

    def add_template() -> None:
        for kind, *args in proof.steps:
            if kind == "segment":
                step = Construction("segment", None, tuple(role_map[x] for x in args))
            else:
                out = next(names)
                role_map[args[0]] = out
                step = Construction(kind, out, tuple(role_map[x] for x in args[1:]))
                defined.append(out)
            steps.append(step)
            record(step)
            if pts is not None and step.out is not None:
                pts[step.out] = construct(step, pts)

    for i in range(n_extra + 1):
        if i == insert_at:
            add_template()
        if i == n_extra:
            break
        kinds_now = [k for k in DISTRACTOR_KINDS if k != "intersect" or len(defined) >= 4]
        for _ in range(20):  # symbolic non-degeneracy: no construction on collinear inputs
            kind = str(rng.choice(kinds_now))
            arity = 4 if kind == "intersect" else (2 if kind == "midpoint" else 3)
            args = _pick(rng, defined, arity)
            if not admissible(kind, args):
                continue
            trial = Construction(kind, "?", args)
            if pts is None or well_posed(trial, pts, 12.0, 0.08, 0.5):
                break
        step = Construction(kind, next(names), args)
        if pts is not None:
            pts[step.out or "?"] = construct(step, pts)
        steps.append(step)
        record(step)
        defined.append(step.out or "")
        kinds.append(kind)
    target = tuple(role_map[x] for x in proof.target)
    composition = f"{name}|{'+'.join(sorted(kinds))}"
    return Seed(
        program=Program(tuple(steps), base),
        template=name,
        roles=(roles[0], roles[1], roles[2]),
        givens=((base[0], a), (base[1], b)),
        target=(target[0], target[1], target[2]),
        tier=tier,
        composition=composition,
    )


def select_seed(
    seed: Seed, *, split: str = "any", holdout: int = 5, seen: set[str] | None = None
) -> str | None:
    """Why a program does not become a seed (None: it does).

    The template's preconditions on the angles, the third angle's minimum, duplicates
    (when ``seen`` is given) and the composition split.
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    ang = seed.angles
    if min(ang.values()) < MIN_THIRD_ANGLE:
        return "precondition: third angle below 30°"
    p, q, r = (ang[v] for v in seed.roles)
    if not seed.proof.requires(p, q, r):
        return f"precondition: template {seed.template} does not apply to these angles"
    if split != "any" and composition_split(seed.composition, holdout) != split:
        return "split: composition belongs to the other split"
    if seen is not None:
        key = seed.program.text + repr(seed.givens)
        if key in seen:
            return "duplicate program"
        seen.add(key)
    return None
