"""Budget study: target accuracy against the epoch budget, ρ and the code amplitude.

(a) Epochs: each method trains once for ``--max-epochs`` with the plateau rule off; the
last-epoch accuracy at budget E is the run's epoch-E value (no schedule depends on E),
the best-epoch curve its running maximum over target epochs (the oracle). The epoch where
the smoke plateau rule (patience 5, min_delta 0.01) would have stopped is reported.
(b) ρ and amplitude: fusion and fusion + MER at the smoke cap (plateau rule on).

    uv run python benchmarks/merdg/budget_study.py --seeds 1 --targets 3 1
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

import numpy as np

from icml26.merdg.data import lodo_split, simulate_cooccurrence
from icml26.merdg.reproduce import PRESETS
from icml26.merdg.train import train_method
from icml26.shared import Plateau, numpy_rng, torch_threads


def _split(sim, seed, target):
    data = simulate_cooccurrence(
        sim, target=target, rng=numpy_rng(seed, "sim", f"{target}", f"{sim.rho}")
    )
    return lodo_split(data, target, rng=numpy_rng(seed, "split", f"{target}"))


def _plateau_epoch(losses):
    rule = Plateau(window=1, patience=5, min_delta=0.01, cap=len(losses))
    for v in losses:
        if rule.update(v):
            break
    return rule.steps


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("--targets", type=int, nargs="+", default=[3, 1])
    p.add_argument("--max-epochs", type=int, default=80)
    p.add_argument("--methods", nargs="+", default=["fusion", "fusion+mer", "unimodal"])
    p.add_argument("--amplitudes", type=float, nargs="+", default=[1.0, 2.0, 3.0])
    p.add_argument("--rhos", type=float, nargs="+", default=[0.5, 0.8, 0.95])
    p.add_argument("--out", default="results/merdg/budget")
    args = p.parse_args()
    base = PRESETS["smoke"]
    budgets = [e for e in (10, 20, 40, 60, 80) if e <= args.max_epochs]
    out: dict = {"epochs": {}, "sweep": []}
    free = replace(base.train, epochs=args.max_epochs, plateau_patience=10**6)
    with torch_threads(1):
        for method in args.methods:
            last, best, stops = [], [], []
            for seed in range(args.seeds):
                for target in args.targets:
                    res = train_method(
                        method, _split(base.sim, seed, target), free, seed=seed, device="cpu"
                    )
                    acc = np.array(res.test_acc)
                    last.append([acc[e - 1] for e in budgets])
                    best.append([acc[:e].max() for e in budgets])
                    stops.append(_plateau_epoch(res.train_loss))
            out["epochs"][method] = {
                "budgets": budgets,
                "last": np.mean(last, 0).tolist(),
                "best": np.mean(best, 0).tolist(),
                "plateau_epoch": stops,
            }
            lm, bm = np.round(100 * np.mean(last, 0), 1), np.round(100 * np.mean(best, 0), 1)
            print(method, "last", lm, "best", bm, "plateau at", stops, flush=True)
        for amp in args.amplitudes:
            for rho in args.rhos:
                sim = replace(base.sim, amplitude=amp, rho=rho)
                accs = {}
                for method in ("fusion", "fusion+mer"):
                    vals = [
                        train_method(
                            method, _split(sim, s, t), base.train, seed=s, device="cpu"
                        ).last_test_acc
                        for s in range(args.seeds)
                        for t in args.targets
                    ]
                    accs[method] = float(np.mean(vals))
                gain = 100 * (accs["fusion+mer"] - accs["fusion"])
                out["sweep"].append({"amplitude": amp, "rho": rho, **accs, "gain_points": gain})
                f, fm = 100 * accs["fusion"], 100 * accs["fusion+mer"]
                print(
                    f"amplitude {amp:g} rho {rho:g}: fusion {f:.1f} fusion+mer {fm:.1f} "
                    f"gain {gain:+.1f}"
                )
    path = Path(args.out)
    path.mkdir(parents=True, exist_ok=True)
    (path / "budget.json").write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
