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
        ours, plain = [], []
        for _ in range(3):
            t = time.process_time()
            for ir in irs:
                render_png(ir, size_px=args.size)
            ours.append((time.process_time() - t) / len(irs))
            t = time.process_time()
            for ir in irs:
                plain_matplotlib(ir, args.size)
            plain.append((time.process_time() - t) / len(irs))
        o, p = float(np.median(ours)), float(np.median(plain))
        print(f"\nIR renderer {1000 * o:.1f} ms/figure, plain matplotlib {1000 * p:.1f} ms/figure, "
              f"ratio {o / p:.2f} (target <= 1.2)")  # fmt: skip


if __name__ == "__main__":
    main()
