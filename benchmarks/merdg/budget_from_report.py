"""Epoch-budget table from a smoke report's per-epoch curves (no training).

Every run of ``icml26 reproduce merdg`` records its training loss, source-validation and
target accuracy per epoch. With a cap E the run would have stopped at min(E, the epoch
the plateau rule stopped it), so the last-epoch accuracy at budget E is the curve's value
there; the best-epoch (oracle) value is the running maximum. Also lists when the plateau
rule stopped each method.

    uv run python benchmarks/merdg/budget_from_report.py results/merdg/smoke/report.json
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import numpy as np


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("report")
    p.add_argument("--budgets", type=int, nargs="+", default=[5, 10, 20, 30, 40])
    args = p.parse_args()
    records = json.loads(Path(args.report).read_text())["records"]
    last, best, stops = defaultdict(list), defaultdict(list), defaultdict(list)
    for rec in records:
        if "curves" not in rec or rec.get("control"):
            continue
        acc = np.array(rec["curves"]["test_acc"]) * 100
        m = rec["method"]
        last[m].append([acc[min(e, len(acc)) - 1] for e in args.budgets])
        best[m].append([acc[: min(e, len(acc))].max() for e in args.budgets])
        stops[m].append(len(acc))
    head = " | ".join(f"E={e}" for e in args.budgets)
    print(f"| method | {head} | plateau stop (median, range) |")
    print("|---|" + "---|" * (len(args.budgets) + 1))
    for m in last:
        cells = " | ".join(
            f"{a:.1f} ({b:.1f})"
            for a, b in zip(np.mean(last[m], 0), np.mean(best[m], 0), strict=True)
        )
        s = stops[m]
        print(f"| {m} | {cells} | {int(np.median(s))} ({min(s)}–{max(s)}) |")
    print("\ncells: last-epoch target accuracy (best-epoch oracle), % over seeds × splits")


if __name__ == "__main__":
    main()
