"""Budget study: All/Old/New and the gap of CURE and SimGCD against the epoch caps.

CURE's Stage-I and Stage-II caps are both ``c``; SimGCD's matched total is ``2c``.
Development seeds (not the smoke seeds 0–2), the datasets of the smoke preset; every run
still stops on its training-loss plateau when that comes first (the epochs each stage
trained are recorded, with the process CPU time of each run).

    python benchmarks/cure/budget_study.py --caps 10 30 60 100 --seeds 10 11 \
        --datasets digits mixture
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from icml26.cure import CURE, SimGCD, SimGCDConfig, gcd_accuracy
from icml26.cure.reproduce import PRESETS, _cure_config, make_dataset
from icml26.shared import numpy_rng, quiet_dependencies, torch_threads


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--caps", type=int, nargs="+", default=[10, 30, 60])
    ap.add_argument("--seeds", type=int, nargs="+", default=[10])
    ap.add_argument("--datasets", nargs="+", default=["digits", "mixture"])
    ap.add_argument("--prop-train-labels", type=float, default=None)
    ap.add_argument("--out", default="results/cure/budget")
    a = ap.parse_args()
    base = PRESETS["smoke"]
    if a.prop_train_labels is not None:
        base = replace(base, prop_train_labels=a.prop_train_labels)
    rows = []
    with quiet_dependencies(), torch_threads(1):
        for dataset, seed in [(d, s) for d in a.datasets for s in a.seeds]:
            data = make_dataset(dataset, base, numpy_rng(seed, "data", dataset))
            for cap in a.caps:
                cfg = replace(
                    base,
                    stage1=replace(base.stage1, cap_epochs=cap),
                    stage2=replace(base.stage2, cap_epochs=cap),
                )
                t0 = time.process_time()
                cure = CURE(_cure_config(cfg), seed=seed, device="cpu").fit(data)
                t1 = time.process_time()
                sim = SimGCD(
                    SimGCDConfig(train=cfg.simgcd_train, net=cfg.net), seed=seed, device="cpu"
                ).fit(data)
                t2 = time.process_time()
                for method, pred, stop, cpu in (
                    (
                        "k-means (Stage-I features)",
                        cure.stage1_kmeans(),
                        cure.stopping["stage1"],
                        None,
                    ),
                    ("CURE", cure.predict(data.x), cure.stopping, t1 - t0),
                    ("SimGCD", sim.predict(data.x), sim.stopping, t2 - t1),
                ):
                    acc = gcd_accuracy(data, pred)
                    row = {
                        "dataset": dataset,
                        "seed": seed,
                        "cap": cap,
                        "method": method,
                        "all": 100 * acc.all,
                        "old": 100 * acc.old,
                        "new": 100 * acc.new,
                        "gap": 100 * abs(acc.old - acc.new),
                        "stopping": stop,
                        "cpu_s": cpu,
                    }
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "budget.json").write_text(json.dumps(rows, indent=1))
    print(
        "| dataset | cap (CURE per stage / SimGCD total) | method | All | Old | New | gap "
        "| epochs trained | CPU s |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for dataset in a.datasets:
        for cap in a.caps:
            for method in ("k-means (Stage-I features)", "CURE", "SimGCD"):
                sel = [
                    r
                    for r in rows
                    if r["dataset"] == dataset and r["cap"] == cap and r["method"] == method
                ]
                cells = [
                    f"{np.mean([r[k] for r in sel]):.1f} ± {np.std([r[k] for r in sel]):.1f}"
                    for k in ("all", "old", "new", "gap")
                ]
                cells += [_epochs(sel), _cpu(sel)]
                print(f"| {dataset} | {cap} / {2 * cap} | {method} | " + " | ".join(cells) + " |")


def _epochs(sel: list[dict]) -> str:
    """Epochs per run ("I+II" for CURE), ``*`` where a stage hit its cap."""
    out = []
    for r in sel:
        s = r["stopping"]
        parts = [s["stage1"], s["stage2"]] if "stage1" in s else [s]
        out.append("+".join(f"{p['steps']}{'*' if p['reason'] == 'cap' else ''}" for p in parts))
    return ", ".join(out)


def _cpu(sel: list[dict]) -> str:
    vals = [r["cpu_s"] for r in sel if r["cpu_s"] is not None]
    return f"{np.mean(vals):.0f}" if vals else "–"


if __name__ == "__main__":
    main()
