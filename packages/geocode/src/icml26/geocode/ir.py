"""The plotting IR: compiler, parser, our own interpreter and deterministic rendering.

The IR is plotting code as data, one drawing command per line::

    VIEW -0.95 -0.95 0.95 0.95
    POINT A -0.51 -0.2
    SEG A B
    CIRCLE D 0.42            # centre point and radius
    RIGHT E C B              # right-angle mark at E between EC and EB
    TICKS A F F B            # AF = FB
    ARCS B A G G A C         # ∠BAG = ∠GAC
    PAR A H B C              # AH ∥ BC
    ANGLE C A B 50           # a given, written at the vertex A
    LABEL A -0.6 -0.27

- :func:`compile_ir` is the Coder [substitute]: it sees the program, the coordinates and
  the givens, never the answer, the target or the reasoning (the paper's leakage rule).
- :func:`parse_ir` reads the text strictly; a malformed line raises ``ValueError``
  naming the line.
- :func:`render_png` is the interpreter: it draws each command with matplotlib's Agg
  canvas (no ``exec``, no pyplot), fixed DPI and font, PNG metadata off, so the same IR
  always gives the same bytes. :func:`to_matplotlib_code` emits equivalent Python for
  people to read; nothing here ever runs it.
- :func:`ir_tokens` is the IR as the decoder's target (coordinates on a coarse grid),
  :func:`parse_tokens` reads a predicted token sequence back, and :func:`element_f1`
  is the paper's segment-F1 extended to circles, points, marks and annotations.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from icml26.geocode.dsl import Program

__all__ = [
    "IR",
    "OPS",
    "Op",
    "annotation_anchor",
    "compile_ir",
    "element_f1",
    "ir_tokens",
    "parse_ir",
    "parse_tokens",
    "render_array",
    "render_png",
    "to_matplotlib_code",
]

# op -> (number of point names, number of floats / ints after them)
OPS: dict[str, tuple[int, int]] = {
    "VIEW": (0, 4),
    "POINT": (1, 2),
    "LABEL": (1, 2),
    "SEG": (2, 0),
    "CIRCLE": (1, 1),
    "RIGHT": (3, 0),
    "TICKS": (4, 0),
    "ARCS": (6, 0),
    "PAR": (4, 0),
    "ANGLE": (3, 3),  # the given in degrees and where its text goes
}
GRID = 8  # decoder coordinates: cells per axis of the view
GIVEN_BOX = (0.045, 0.035)  # half-width, half-height of a given's text, of the view's side
LABEL_BOX = (0.03, 0.035)


@dataclass(frozen=True)
class Op:
    op: str
    names: tuple[str, ...]
    values: tuple[float, ...]

    @property
    def line(self) -> str:
        vals = [
            str(int(v)) if self.op == "ANGLE" and i == 0 else repr(float(v))
            for i, v in enumerate(self.values)
        ]
        return " ".join([self.op, *self.names, *vals])


@dataclass(frozen=True)
class IR:
    ops: tuple[Op, ...]

    @property
    def text(self) -> str:
        return "\n".join(o.line for o in self.ops) + "\n"

    @property
    def view(self) -> tuple[float, float, float, float]:
        for o in self.ops:
            if o.op == "VIEW":
                return (o.values[0], o.values[1], o.values[2], o.values[3])
        raise ValueError("the IR has no VIEW line")

    @property
    def points(self) -> dict[str, np.ndarray]:
        return {o.names[0]: np.array(o.values) for o in self.ops if o.op == "POINT"}

    def of(self, op: str) -> list[Op]:
        return [o for o in self.ops if o.op == op]


# -- the Coder ---------------------------------------------------------------------------
def _view(coords: Mapping[str, np.ndarray], base: Sequence[str]) -> tuple[float, ...]:
    tri = np.array([coords[n] for n in base])
    lo, hi = tri.min(0), tri.max(0)
    centre, half = (lo + hi) / 2, float((hi - lo).max()) / 2
    half *= 1.45  # room for constructions, labels and annotations
    return (centre[0] - half, centre[1] - half, centre[0] + half, centre[1] + half)


def label_position(
    name: str, coords: Mapping[str, np.ndarray], view: Sequence[float]
) -> tuple[float, float]:
    """A label's anchor: pushed away from the figure's centroid by 6% of the view."""
    size = view[2] - view[0]
    centre = np.mean([v for v in coords.values() if np.all(np.isfinite(v))], axis=0)
    p = np.asarray(coords[name], dtype=float)
    if not np.all(np.isfinite(p)):
        return float(p[0]), float(p[1])
    d = p - centre
    norm = float(np.hypot(*d))
    d = d / norm if norm > 1e-12 else np.array([0.0, 1.0])  # norm is finite here
    q = p + 0.06 * size * d
    return float(q[0]), float(q[1])


def compile_ir(
    program: Program, coords: Mapping[str, np.ndarray], givens: Sequence[tuple[str, int]]
) -> IR:
    """Compile a program and its coordinates into the plotting IR.

    Gets no answer, no target and no reasoning steps (the paper's leakage rule); the
    givens are drawn as angle annotations at their vertices.
    """
    a, b, c = program.base
    view = _view(coords, program.base)
    ops = [Op("VIEW", (), view)]
    names = program.points
    ops += [Op("POINT", (n,), (float(coords[n][0]), float(coords[n][1]))) for n in names]
    segs: list[tuple[str, str]] = []

    def seg(p: str, q: str) -> None:
        if (p, q) not in segs and (q, p) not in segs and p != q:
            segs.append((p, q))

    marks: list[Op] = []
    seg(a, b), seg(b, c), seg(c, a)
    for s in program.steps:
        x, args = s.out, s.args
        if s.kind == "segment":
            seg(*args)
        elif s.kind == "midpoint":
            seg(args[0], x), seg(x, args[1])
            marks.append(Op("TICKS", (args[0], x, x, args[1]), ()))
        elif s.kind == "foot":
            p, q, r = args
            seg(p, x), seg(q, r)
            # the base line reaches the foot when it falls outside QR
            t = _param_on(coords[x], coords[q], coords[r])
            if t < 0:
                seg(x, q)
            elif t > 1:
                seg(r, x)
            other = r if abs(t - 1) > 1e-6 else q
            marks.append(Op("RIGHT", (x, p, other), ()))
        elif s.kind == "bisector":
            p, q, r = args
            seg(p, x), seg(q, r)
            marks.append(Op("ARCS", (q, p, x, x, p, r), ()))
        elif s.kind in ("circumcenter", "incenter"):
            p, q, r = args
            if s.kind == "circumcenter":
                radius = float(np.hypot(*(coords[x] - coords[p])))
            else:
                u, v = coords[q] - coords[p], coords[x] - coords[p]
                radius = abs(float(u[0] * v[1] - u[1] * v[0])) / float(np.hypot(*u))
            marks.append(Op("CIRCLE", (x,), (radius,)))
        elif s.kind == "centroid":
            for p in args:
                seg(p, x)
        elif s.kind == "intersect":
            p, q, r, t4 = args
            seg(p, x), seg(q, x), seg(r, x), seg(t4, x)
        elif s.kind == "parallel":
            p, q, r = args
            seg(p, x), seg(q, r)
            marks.append(Op("PAR", (p, x, q, r), ()))
        elif s.kind == "tangent":
            p, o, q = args
            seg(p, x), seg(o, x)
            marks.append(Op("CIRCLE", (o,), (float(np.hypot(*(coords[q] - coords[o]))),)))
            marks.append(Op("RIGHT", (x, o, p), ()))
    ops += [Op("SEG", s, ()) for s in segs]
    ops += marks
    rest = {a: (b, c), b: (c, a), c: (a, b)}
    for vertex, degrees in givens:
        u, w = rest[vertex]
        anchor = _place_given(coords, (w, vertex, u), segs, view)
        ops.append(Op("ANGLE", (w, vertex, u), (float(int(degrees)), *anchor)))
    ops += _place_labels(names, coords, view, [o for o in ops if o.op == "ANGLE"])
    return IR(tuple(ops))


def _rect(x: float, y: float, hw: float, hh: float) -> tuple[float, float, float, float]:
    return (x - hw, y - hh, x + hw, y + hh)


def _rects_meet(a: Sequence[float], b: Sequence[float]) -> bool:
    return a[0] <= b[2] and b[0] <= a[2] and a[1] <= b[3] and b[1] <= a[3]


def _rect_meets_disc(r: Sequence[float], c: np.ndarray, radius: float) -> bool:
    dx = max(r[0] - c[0], 0.0, c[0] - r[2])
    dy = max(r[1] - c[1], 0.0, c[1] - r[3])
    return dx * dx + dy * dy <= radius * radius


def _rect_meets_segment(r: Sequence[float], p: np.ndarray, q: np.ndarray) -> bool:
    """Liang–Barsky clipping: does the segment PQ reach the closed rectangle?"""
    t0, t1 = 0.0, 1.0
    d = (float(q[0] - p[0]), float(q[1] - p[1]))
    for delta, lo, hi, start in ((d[0], r[0], r[2], p[0]), (d[1], r[1], r[3], p[1])):
        if abs(delta) < 1e-15:
            if start < lo or start > hi:
                return False
            continue
        a, b = (lo - start) / delta, (hi - start) / delta
        if a > b:
            a, b = b, a
        t0, t1 = max(t0, a), min(t1, b)
        if t0 > t1:
            return False
    return True


def _place_labels(names, coords, view, givens) -> list[Op]:
    """Each label at the first of nine spots around its point clear of earlier labels,
    the givens' text and other points (outward from the figure's centroid first).

    Plain rectangle tests (the visual stage checks the result again with ``shapely``)."""
    size = view[2] - view[0]
    hw, hh = 0.03 * size, 0.035 * size
    gw, gh = GIVEN_BOX
    taken = [_rect(o.values[1], o.values[2], gw * size, gh * size) for o in givens]
    dots = {n: np.asarray(coords[n], dtype=float) for n in names if np.all(np.isfinite(coords[n]))}
    radius = 0.012 * size
    out = []
    for n in names:
        p = np.asarray(coords[n], dtype=float)
        if n not in dots:  # a degenerate point: the coordinate stage rejects it
            out.append(Op("LABEL", (n,), (float(p[0]), float(p[1]))))
            continue
        first = label_position(n, coords, view)
        spots = [first] + [
            (p[0] + 0.065 * size * math.cos(t), p[1] + 0.065 * size * math.sin(t))
            for t in np.linspace(0, 2 * math.pi, 8, endpoint=False)
        ]
        chosen = first
        for x, y in spots:
            b = _rect(x, y, hw, hh)
            if not any(_rects_meet(b, t) for t in taken) and not any(
                _rect_meets_disc(b, d, radius) for m, d in dots.items() if m != n
            ):
                chosen = (float(x), float(y))
                break
        taken.append(_rect(chosen[0], chosen[1], hw, hh))
        out.append(Op("LABEL", (n,), chosen))
    return out


# where a given's text may go inside its angle: distance from the vertex (of the view's
# side) and fraction of the angle, the first clear spot wins
_GIVEN_SPOTS = [
    (dist, frac)
    for dist in (0.16, 0.22, 0.12, 0.28, 0.34, 0.40)
    for frac in (0.5, 0.35, 0.65, 0.2, 0.8, 0.1, 0.9)
]


def _place_given(coords, names, segs, view) -> tuple[float, float]:
    """The first of a few spots inside the angle whose text box no segment crosses."""
    size = view[2] - view[0]
    u, v, w = (np.asarray(coords[n], dtype=float) for n in names)
    t1 = math.atan2(*(u - v)[::-1])
    t2 = math.atan2(*(w - v)[::-1])
    diff = (t2 - t1 + math.pi) % (2 * math.pi) - math.pi
    lines = [
        (np.asarray(coords[p], dtype=float), np.asarray(coords[q], dtype=float))
        for p, q in segs
        if np.all(np.isfinite(coords[p])) and np.all(np.isfinite(coords[q]))
    ]
    first = None
    for dist, frac in _GIVEN_SPOTS:
        t = t1 + frac * diff
        spot = (float(v[0] + dist * size * math.cos(t)), float(v[1] + dist * size * math.sin(t)))
        first = first or spot
        b = _rect(spot[0], spot[1], GIVEN_BOX[0] * size, GIVEN_BOX[1] * size)
        if not any(_rect_meets_segment(b, p, q) for p, q in lines):
            return spot
    return first or (float(v[0]), float(v[1]))


def _param_on(x: np.ndarray, q: np.ndarray, r: np.ndarray) -> float:
    d = r - q
    den = float(d @ d)
    return float((x - q) @ d) / den if den > 0 else 0.0


# -- parsing -----------------------------------------------------------------------------
def parse_ir(text: str) -> IR:
    """Read IR text strictly; errors name the line and what was wrong with it."""
    if not isinstance(text, str):
        raise TypeError(f"IR text must be a str, got {type(text).__name__}")
    ops: list[Op] = []
    defined: set[str] = set()
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        head, *rest = line.split()
        if head not in OPS:
            raise ValueError(f"IR line {lineno}: unknown command {head!r} in {raw.strip()!r}")
        n_names, n_vals = OPS[head]
        if len(rest) != n_names + n_vals:
            raise ValueError(
                f"IR line {lineno}: {head} takes {n_names} name(s) and {n_vals} number(s), "
                f"got {len(rest)} field(s) in {raw.strip()!r}"
            )
        names = tuple(rest[:n_names])
        try:
            values = tuple(float(v) for v in rest[n_names:])
        except ValueError:
            raise ValueError(
                f"IR line {lineno}: expected numbers after the names in {raw.strip()!r}"
            ) from None
        if head == "POINT":
            defined.add(names[0])
        elif head != "VIEW":
            missing = [n for n in names if n not in defined]
            if missing:
                raise ValueError(
                    f"IR line {lineno}: {head} refers to undefined point(s) {missing} "
                    f"in {raw.strip()!r}"
                )
        ops.append(Op(head, names, values))
    if not any(o.op == "VIEW" for o in ops):
        raise ValueError("IR: no VIEW line")
    return IR(tuple(ops))


def read_points_leniently(text: str) -> tuple[dict[str, np.ndarray], list[Op]]:
    """POINT and ANGLE lines that read, skipping the rest (the semantic stage's view)."""
    pts: dict[str, np.ndarray] = {}
    angles: list[Op] = []
    for raw in text.splitlines():
        parts = raw.split("#", 1)[0].split()
        try:
            if parts and parts[0] == "POINT" and len(parts) == 4:
                pts[parts[1]] = np.array([float(parts[2]), float(parts[3])])
            elif parts and parts[0] == "ANGLE" and len(parts) == 7:
                angles.append(Op("ANGLE", tuple(parts[1:4]), tuple(float(v) for v in parts[4:])))
        except ValueError:
            continue
    return pts, angles


# -- the interpreter ---------------------------------------------------------------------
def annotation_anchor(ir: IR, op: Op) -> tuple[float, float]:
    """Where an ANGLE annotation's text goes (chosen by the compiler, stored in the IR)."""
    return float(op.values[1]), float(op.values[2])


_STYLE = {
    "font.family": "DejaVu Sans",
    "font.size": 10,
    "path.simplify": False,
    "text.hinting": "auto",
    "svg.hashsalt": "geocode",
}


@dataclass(frozen=True)
class DisplayList:
    """What the interpreter makes of an IR: strokes, filled shapes, dots and texts.

    ``texts`` are ``(x, y, string, size, bold)`` with sizes in points at 128 px.
    """

    view: tuple[float, float, float, float]
    strokes: tuple[np.ndarray, ...]
    fills: tuple[np.ndarray, ...]
    dots: np.ndarray
    texts: tuple[tuple[float, float, str, float, bool], ...]


def _arc(centre: np.ndarray, r: float, t1: float, t2: float, n: int = 24) -> np.ndarray:
    t = np.linspace(t1, t2, n)
    return centre + r * np.stack([np.cos(t), np.sin(t)], axis=1)


def _angle_span(u: np.ndarray, v: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    t1 = math.atan2(*(u - v)[::-1])
    t2 = math.atan2(*(w - v)[::-1])
    diff = (t2 - t1 + math.pi) % (2 * math.pi) - math.pi
    return t1, t1 + diff


def interpret(ir: IR | str) -> DisplayList:
    """Run the IR in our interpreter: every command becomes strokes, fills or texts.

    Raises ``ValueError`` for an IR that does not parse or draws a degenerate mark (a
    zero-length segment carrying ticks, a right angle at an endpoint ...).
    """
    if isinstance(ir, str):
        ir = parse_ir(ir)
    size = ir.view[2] - ir.view[0]
    if not size > 0:
        raise ValueError(f"IR: the VIEW has no extent: {ir.view}")
    pts = ir.points
    strokes: list[np.ndarray] = []
    fills: list[np.ndarray] = []
    texts: list[tuple[float, float, str, float, bool]] = []

    def unit(d: np.ndarray, what: str) -> np.ndarray:
        n = float(np.hypot(*d))
        if not n > 1e-12:
            raise ValueError(f"IR: {what} has zero length")
        return d / n

    for o in ir.ops:
        if o.op == "SEG":
            p, q = (pts[n] for n in o.names)
            strokes.append(np.array([p, q]))
        elif o.op == "CIRCLE":
            r = o.values[0]
            if not r > 0:
                raise ValueError(f"IR: {o.line}: the radius must be positive")
            strokes.append(_arc(pts[o.names[0]], r, 0.0, 2 * math.pi, 72))
        elif o.op == "RIGHT":
            x, p, q = (pts[n] for n in o.names)
            e1 = unit(p - x, o.line) * 0.05 * size
            e2 = unit(q - x, o.line) * 0.05 * size
            strokes.append(np.array([x + e1, x + e1 + e2, x + e2]))
        elif o.op == "TICKS":
            for p, q in ((o.names[0], o.names[1]), (o.names[2], o.names[3])):
                a, b = pts[p], pts[q]
                d = unit(b - a, o.line)
                m, nrm = (a + b) / 2, np.array([-d[1], d[0]]) * 0.03 * size
                strokes.append(np.array([m - nrm, m + nrm]))
        elif o.op == "ARCS":
            for u, v, w in (o.names[:3], o.names[3:]):
                pu, pv, pw = pts[u], pts[v], pts[w]
                unit(pu - pv, o.line), unit(pw - pv, o.line)
                strokes.append(_arc(pv, 0.09 * size, *_angle_span(pu, pv, pw)))
        elif o.op == "PAR":
            for p, q in ((o.names[0], o.names[1]), (o.names[2], o.names[3])):
                a, b = pts[p], pts[q]
                d = unit(b - a, o.line)
                m, nrm, s = (a + b) / 2, np.array([-d[1], d[0]]), 0.03 * size
                fills.append(np.array([m + d * s, m - d * s + nrm * s, m - d * s - nrm * s]))
        elif o.op == "ANGLE":
            u, v, w = (pts[n] for n in o.names)
            unit(u - v, o.line), unit(w - v, o.line)
            strokes.append(_arc(v, 0.07 * size, *_angle_span(u, v, w)))
            texts.append((o.values[1], o.values[2], str(int(o.values[0])), 9.0, True))
        elif o.op == "LABEL":
            texts.append((o.values[0], o.values[1], o.names[0], 7.0, False))
    for arr in [*strokes, *fills]:
        if not np.all(np.isfinite(arr)):
            raise ValueError("IR: a drawing command has non-finite coordinates")
    dots = np.array(list(pts.values())) if pts else np.zeros((0, 2))
    return DisplayList(ir.view, tuple(strokes), tuple(fills), dots, tuple(texts))


def render_png(ir: IR | str | DisplayList, *, size_px: int = 128) -> bytes:
    """Render to PNG bytes with matplotlib's Agg canvas: deterministic (same IR, same
    bytes), fixed DPI and font, no PNG metadata; line widths and fonts scale with size."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.collections import LineCollection, PolyCollection
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.text import Text
    from matplotlib.transforms import Affine2D

    if isinstance(size_px, bool) or not isinstance(size_px, int) or size_px < 16:
        raise ValueError(f"size_px must be an int >= 16, got {size_px!r}")
    dl = ir if isinstance(ir, DisplayList) else interpret(ir)
    scale = size_px / 128
    x0, y0, x1, y1 = dl.view
    # the view onto the whole canvas, in pixels: no Axes (its ticks, spines and layout
    # are most of a figure's cost and draw nothing here)
    to_px = Affine2D().translate(-x0, -y0).scale(size_px / (x1 - x0), size_px / (y1 - y0))
    with matplotlib.rc_context(_STYLE):
        fig = Figure(figsize=(size_px / 100, size_px / 100), dpi=100)
        canvas = FigureCanvasAgg(fig)
        fig.add_artist(LineCollection(list(dl.strokes), colors="black", linewidths=scale,
                                      capstyle="round", transform=to_px))  # fmt: skip
        if dl.fills:
            fig.add_artist(
                PolyCollection(list(dl.fills), facecolors="black", linewidths=0, transform=to_px)
            )
        if len(dl.dots):
            dots = Line2D(dl.dots[:, 0], dl.dots[:, 1], ls="none", marker="o", ms=1.5 * scale,
                          mew=0, color="black", transform=to_px)  # fmt: skip
            fig.add_artist(dots)
        for x, y, s, pt, bold in dl.texts:
            fig.add_artist(Text(x, y, s, ha="center", va="center", fontsize=pt * scale,
                                fontweight="bold" if bold else "normal", color="black",
                                transform=to_px))  # fmt: skip
        buf = io.BytesIO()
        canvas.print_png(buf, metadata={"Software": None})
    return buf.getvalue()


def render_array(ir: IR | str, *, size_px: int = 64) -> np.ndarray:
    """The rendering as a ``(size_px, size_px)`` uint8 grey image (ink = high values)."""
    from PIL import Image

    png = render_png(ir, size_px=size_px)
    img = np.asarray(Image.open(io.BytesIO(png)).convert("L"), dtype=np.uint8)
    return 255 - img


def png_to_array(png: bytes) -> np.ndarray:
    from PIL import Image

    return 255 - np.asarray(Image.open(io.BytesIO(png)).convert("L"), dtype=np.uint8)


def to_matplotlib_code(ir: IR | str, *, size_px: int = 128) -> str:
    """Equivalent matplotlib code for people to read (the package never executes it)."""
    if isinstance(ir, str):
        ir = parse_ir(ir)
    pts = ir.points
    x0, y0, x1, y1 = ir.view
    out = [
        "import matplotlib",
        "matplotlib.use('Agg')",
        "import matplotlib.pyplot as plt",
        "from matplotlib.patches import Circle",
        f"fig = plt.figure(figsize=({size_px / 100}, {size_px / 100}), dpi=100)",
        "ax = fig.add_axes((0, 0, 1, 1))",
        f"ax.set_xlim({x0:.4f}, {x1:.4f}); ax.set_ylim({y0:.4f}, {y1:.4f})",
        "ax.set_aspect('equal'); ax.set_axis_off()",
    ]
    out += [f"{n} = ({p[0]:.6f}, {p[1]:.6f})" for n, p in pts.items()]
    for o in ir.ops:
        if o.op == "SEG":
            p, q = o.names
            out.append(f"ax.plot([{p}[0], {q}[0]], [{p}[1], {q}[1]], color='black')")
        elif o.op == "CIRCLE":
            out.append(f"ax.add_patch(Circle({o.names[0]}, {o.values[0]:.6f}, fill=False))")
        elif o.op == "ANGLE":
            tx, ty = annotation_anchor(ir, o)
            out.append(f"ax.text({tx:.4f}, {ty:.4f}, '{int(o.values[0])}', fontweight='bold')")
        elif o.op == "LABEL":
            out.append(f"ax.text({o.values[0]:.4f}, {o.values[1]:.4f}, '{o.names[0]}')")
        elif o.op in ("RIGHT", "TICKS", "ARCS", "PAR"):
            out.append(f"# {o.line}  (mark drawn by the IR interpreter)")
    out.append("fig.savefig('figure.png', metadata={'Software': None})")
    return "\n".join(out) + "\n"


# -- the decoder's view ------------------------------------------------------------------
def _cell(v: float, lo: float, hi: float) -> int:
    return int(min(GRID - 1, max(0, math.floor((v - lo) / (hi - lo) * GRID))))


def ir_tokens(ir: IR) -> list[str]:
    """The IR as decoder tokens: POINT name x-cell y-cell, SEG, CIRCLE, marks, givens.

    VIEW and LABEL lines are left out (the renderer derives them); coordinates are
    cells of a GRID × GRID grid over the view; radii are dropped.
    """
    x0, y0, x1, y1 = ir.view
    toks: list[str] = []
    for o in ir.ops:
        if o.op in ("VIEW", "LABEL"):
            continue
        toks.append(o.op)
        toks += list(o.names)
        if o.op == "POINT":
            toks += [f"x{_cell(o.values[0], x0, x1)}", f"y{_cell(o.values[1], y0, y1)}"]
        elif o.op == "ANGLE":
            toks.append(f"v{int(o.values[0])}")
        toks.append(";")
    return toks


def parse_tokens(tokens: Sequence[str]) -> list[tuple[str, ...]] | None:
    """A decoded token sequence back into elements; None when it does not parse."""
    out: list[tuple[str, ...]] = []
    defined: set[str] = set()
    cur: list[str] = []
    for tok in tokens:
        if tok != ";":
            cur.append(tok)
            continue
        if not cur or cur[0] not in OPS:
            return None
        n_names, n_vals = OPS[cur[0]]
        n_vals = {"POINT": 2, "ANGLE": 1, "CIRCLE": 0}.get(cur[0], 0)
        if len(cur) != 1 + n_names + n_vals:
            return None
        names = cur[1 : 1 + n_names]
        if cur[0] == "POINT":
            defined.add(names[0])
        elif any(n not in defined for n in names):
            return None
        out.append(tuple(cur))
        cur = []
    if cur:
        return None
    return out


def _canonical(el: tuple[str, ...]) -> tuple[str, ...]:
    op, rest = el[0], el[1:]
    if op == "SEG":
        return (op, *sorted(rest))
    return el


def element_f1(pred: Iterable[tuple[str, ...]], gold: Iterable[tuple[str, ...]]) -> dict:
    """F1 of predicted against gold IR elements, per kind and over all of them.

    ``segment`` is the paper's segment-F1; ``circle``, ``point`` (name and grid cell),
    ``mark`` and ``given`` extend it, and ``all`` pools every element.
    """
    kinds = {
        "segment": ("SEG",),
        "circle": ("CIRCLE",),
        "point": ("POINT",),
        "mark": ("RIGHT", "TICKS", "ARCS", "PAR"),
        "given": ("ANGLE",),
    }
    p = {_canonical(e) for e in pred}
    g = {_canonical(e) for e in gold}
    out = {}
    for kind, ops in [*kinds.items(), ("all", tuple(OPS))]:
        pk = {e for e in p if e[0] in ops}
        gk = {e for e in g if e[0] in ops}
        if not pk and not gk:
            out[kind] = 1.0
            continue
        tp = len(pk & gk)
        out[kind] = 2 * tp / (len(pk) + len(gk))
    return out
