"""Throughput of the verified pipeline and the IR renderer against plain matplotlib.

    uv run python benchmarks/geocode/bench_pipeline.py [--n 40]

Reports verified problems per CPU-second (one process) per tier, with and without fault
injection, the rejection share per stage, and the time per figure of the IR renderer
against plain matplotlib (pyplot-free Figure, one ``ax.plot`` per segment, patches for
circles, ``ax.text`` per label) drawing the same figures, measured side by side in one
run (CPU time, so contention from other processes inflates it less than wall time).
"""

from __future__ import annotations

import argparse
import io
import time

import numpy as np


def plain_matplotlib(ir, size_px: int) -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import Circle

    fig = Figure(figsize=(size_px / 100, size_px / 100), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_axes((0, 0, 1, 1))
    x0, y0, x1, y1 = ir.view
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    ax.set_axis_off()
    pts = ir.points
    for o in ir.of("SEG"):
        p, q = (pts[n] for n in o.names)
        ax.plot([p[0], q[0]], [p[1], q[1]], color="black", lw=1)
    for o in ir.of("CIRCLE"):
        ax.add_patch(Circle(pts[o.names[0]], o.values[0], fill=False))
    for o in ir.of("LABEL"):
        ax.text(o.values[0], o.values[1], o.names[0], fontsize=7 * size_px / 128)
    for o in ir.of("ANGLE"):
        ax.text(o.values[1], o.values[2], str(int(o.values[0])), fontsize=9 * size_px / 128)
    buf = io.BytesIO()
    fig.canvas.print_png(buf)
    return buf.getvalue()


def axes_renderer(ir, size_px: int) -> bytes:
    """The 0.1.x renderer (the same display list drawn through a full-figure Axes), kept
    here to measure the 0.2.0 renderer against it side by side."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.collections import LineCollection, PolyCollection
    from matplotlib.figure import Figure

    from icml26.geocode.ir import _STYLE, interpret

    dl = interpret(ir)
    scale = size_px / 128
    with matplotlib.rc_context(_STYLE):
        fig = Figure(figsize=(size_px / 100, size_px / 100), dpi=100)
        canvas = FigureCanvasAgg(fig)
        ax = fig.add_axes((0.0, 0.0, 1.0, 1.0))
        x0, y0, x1, y1 = dl.view
        ax.set_xlim(x0, x1)
        ax.set_ylim(y0, y1)
        ax.set_axis_off()
        ax.add_collection(LineCollection(list(dl.strokes), colors="black", linewidths=scale))
        if dl.fills:
            ax.add_collection(PolyCollection(list(dl.fills), facecolors="black", linewidths=0))
        if len(dl.dots):
            ax.scatter(dl.dots[:, 0], dl.dots[:, 1], s=(1.5 * scale) ** 2, c="black", lw=0)
        for x, y, s, pt, bold in dl.texts:
            ax.text(x, y, s, ha="center", va="center", fontsize=pt * scale,
                    fontweight="bold" if bold else "normal")  # fmt: skip
        buf = io.BytesIO()
        canvas.print_png(buf, metadata={"Software": None})
    return buf.getvalue()


def main() -> None:
    from icml26.geocode import STAGES, parse_ir, render_png, synthesize
    from icml26.shared import quiet_dependencies

    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--size", type=int, default=64)
    args = ap.parse_args()
    with quiet_dependencies():
        synthesize(2, seed=99)  # warm imports
        cols = ["tier", "faults", "verified/CPU-s", "programs", *STAGES]
        print("| " + " | ".join(cols) + " |")
        print("|---|---|---|---|---|---|---|---|")
        problems = None
        for tier in ("textbook", "geocode"):
            for faults in (0.0, 0.05):
                t = time.process_time()
                syn = synthesize(args.n, tier=tier, seed=1, faults=faults, size_px=args.size)
                cpu = time.process_time() - t
                f = syn.funnel
                shares = " | ".join(f"{f.rejected[s] / max(f.seeds, 1):.2f}" for s in f.rejected)
                rate = len(syn.problems) / cpu
                print(f"| {tier} | {faults:g} | {rate:.1f} | {f.programs} | {shares} |")
                if tier == "geocode" and faults == 0:
                    problems = syn.problems
        irs = [parse_ir(p.ir) for p in problems]
        ours, plain, old = [], [], []
        for _ in range(3):
            t = time.process_time()
            for ir in irs:
                render_png(ir, size_px=args.size)
            ours.append((time.process_time() - t) / len(irs))
            t = time.process_time()
            for ir in irs:
                plain_matplotlib(ir, args.size)
            plain.append((time.process_time() - t) / len(irs))
            t = time.process_time()
            for ir in irs:
                axes_renderer(ir, args.size)
            old.append((time.process_time() - t) / len(irs))
        o, p, a = (float(np.median(x)) for x in (ours, plain, old))
        print(f"\nIR renderer {1000 * o:.1f} ms/figure, plain matplotlib {1000 * p:.1f} ms/figure, "
              f"ratio {o / p:.2f} (target <= 1.2); the 0.1.x Axes renderer {1000 * a:.1f} "
              f"ms/figure (0.2.0 / 0.1.x = {o / a:.2f}); CPU time, {len(irs)} figures, "
              "median of 3 passes")  # fmt: skip


if __name__ == "__main__":
    main()
