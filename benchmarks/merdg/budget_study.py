"""Budget study: target accuracy against the epoch budget, ρ and the code amplitude.

Run on development seeds (default 100 and 101), never the evaluation seeds 0-2 of the
smoke table.

(a) Epochs: each method trains once for ``--max-epochs`` with the plateau rule off; the
last-epoch accuracy at budget E is the run's epoch-E value (Adam without a schedule:
a run capped at E is this run's first E epochs), the best-epoch curve its running
maximum over target epochs (the oracle). The epoch where the smoke plateau rule
(patience 5, min_delta 0.01) would have stopped is reported.
(b) ρ × amplitude: fusion and fusion + MER at the smoke cap (plateau rule on).

Every split, method and setting of a part is trained at once on stacked parameters
(``icml26.merdg.batched``). CPU time is printed per part.

    uv run python benchmarks/merdg/budget_study.py
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from icml26.merdg.reproduce import PRESETS, Cell, run_cells
from icml26.merdg.train import METHODS
from icml26.shared import Plateau, torch_threads


def _plateau_epoch(losses):
    rule = Plateau(window=1, patience=5, min_delta=0.01, cap=len(losses))
    for v in losses:
        if rule.update(v):
            break
    return rule.steps


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[100, 101])
    p.add_argument("--targets", type=int, nargs="+", default=[0, 1, 2, 3])
    p.add_argument("--max-epochs", type=int, default=80)
    p.add_argument("--methods", nargs="*", default=["fusion", "fusion+mer", "unimodal"])
    p.add_argument("--amplitudes", type=float, nargs="*", default=[1.0, 2.0, 3.0])
    p.add_argument("--rhos", type=float, nargs="*", default=[0.5, 0.8, 0.95])
    p.add_argument("--sweep-seeds", type=int, nargs="*", default=[100])
    p.add_argument("--out", default="results/merdg/budget")
    args = p.parse_args()
    base = PRESETS["smoke"]
    budgets = sorted(
        {e for e in (10, 20, 30, 40, 60, 80) if e <= args.max_epochs} | {args.max_epochs}
    )
    out: dict = {"seeds": args.seeds, "epochs": {}, "sweep": [], "cpu_seconds": {}}
    free = replace(
        base,
        train=replace(base.train, epochs=args.max_epochs, plateau_patience=10**6),
        probe_methods=(),
    )
    with torch_threads(1):
        t0 = time.process_time()
        recs = []
        for seed in args.seeds:
            cells = [
                Cell(t, (0, 1), METHODS[m], base.sim) for t in args.targets for m in args.methods
            ]
            recs += run_cells(free, seed, cells)
        out["cpu_seconds"]["epochs"] = time.process_time() - t0
        for method in args.methods:
            runs = [r for r in recs if r["method"] == method and "curves" in r]
            acc = np.array([r["curves"]["test_acc"] for r in runs]) * 100
            last = acc[:, [e - 1 for e in budgets]]
            best = np.stack([acc[:, :e].max(1) for e in budgets], 1)
            stops = [_plateau_epoch(r["curves"]["train_loss"]) for r in runs]
            out["epochs"][method] = {
                "budgets": budgets,
                "last_mean": last.mean(0).tolist(),
                "last_sd": last.std(0, ddof=1).tolist(),
                "best_mean": best.mean(0).tolist(),
                "plateau_epoch": stops,
            }
            print(
                method,
                "last",
                np.round(last.mean(0), 1),
                "best",
                np.round(best.mean(0), 1),
                "plateau at",
                stops,
                flush=True,
            )
        print(f"epochs part: {out['cpu_seconds']['epochs']:.0f} CPU-s", flush=True)
        t0 = time.process_time()
        settings = [(a, r) for a in args.amplitudes for r in args.rhos]
        cfg = replace(base, probe_methods=())
        pairs = []
        for seed in args.sweep_seeds:
            cells = [
                Cell(t, (0, 1), METHODS[m], replace(base.sim, amplitude=a, rho=r))
                for a, r in settings
                for t in args.targets
                for m in ("fusion", "fusion+mer")
            ]
            pairs += list(zip(cells, run_cells(cfg, seed, cells), strict=True))
        out["cpu_seconds"]["sweep"] = time.process_time() - t0
        for a, r in settings:
            accs = {}
            for m in ("fusion", "fusion+mer"):
                vals = [
                    100 * x["target_acc"]
                    for c, x in pairs
                    if "target_acc" in x
                    and c.method.name == m
                    and (c.sim.amplitude, c.sim.rho) == (a, r)
                ]
                accs[m] = float(np.mean(vals)) if vals else float("nan")
            gain = accs["fusion+mer"] - accs["fusion"]
            out["sweep"].append({"amplitude": a, "rho": r, **accs, "gain_points": gain})
            print(
                f"amplitude {a:g} rho {r:g}: fusion {accs['fusion']:.1f} "
                f"fusion+mer {accs['fusion+mer']:.1f} gain {gain:+.1f}",
                flush=True,
            )
        print(f"sweep part: {out['cpu_seconds']['sweep']:.0f} CPU-s", flush=True)
    path = Path(args.out)
    path.mkdir(parents=True, exist_ok=True)
    (path / "budget.json").write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
