"""Budget study: All/Old/New and the gap of CURE and SimGCD against the epoch caps.

CURE's Stage-I and Stage-II caps are both ``c``; SimGCD's matched total is ``2c``.
Development seeds (not the smoke seeds 0–2), the close-sibling mixture of the smoke
preset; every run still stops on its training-loss plateau when that comes first.

    python benchmarks/cure/budget_study.py --caps 10 30 60 --seeds 10
"""

from __future__ import annotations

import argparse
import json
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
    ap.add_argument("--dataset", default="mixture")
    ap.add_argument("--prop-train-labels", type=float, default=None)
    ap.add_argument("--out", default="results/cure/budget")
    a = ap.parse_args()
    base = PRESETS["smoke"]
    if a.prop_train_labels is not None:
        base = replace(base, prop_train_labels=a.prop_train_labels)
    rows = []
    with quiet_dependencies(), torch_threads(1):
        for seed in a.seeds:
            data = make_dataset(a.dataset, base, numpy_rng(seed, "data", a.dataset))
            for cap in a.caps:
                cfg = replace(
                    base,
                    stage1=replace(base.stage1, cap_epochs=cap),
                    stage2=replace(base.stage2, cap_epochs=cap),
                )
                cure = CURE(_cure_config(cfg), seed=seed, device="cpu").fit(data)
                sim = SimGCD(
                    SimGCDConfig(train=cfg.simgcd_train, net=cfg.net), seed=seed, device="cpu"
                ).fit(data)
                for method, pred, stop in (
                    ("k-means (Stage-I features)", cure.stage1_kmeans(), cure.stopping["stage1"]),
                    ("CURE", cure.predict(data.x), cure.stopping),
                    ("SimGCD", sim.predict(data.x), sim.stopping),
                ):
                    acc = gcd_accuracy(data, pred)
                    row = {
                        "seed": seed,
                        "cap": cap,
                        "method": method,
                        "all": 100 * acc.all,
                        "old": 100 * acc.old,
                        "new": 100 * acc.new,
                        "gap": 100 * abs(acc.old - acc.new),
                        "stopping": stop,
                    }
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "budget.json").write_text(json.dumps(rows, indent=1))
    print("| cap (CURE per stage / SimGCD total) | method | All | Old | New | gap |")
    print("|---|---|---|---|---|---|")
    for cap in a.caps:
        for method in ("k-means (Stage-I features)", "CURE", "SimGCD"):
            sel = [r for r in rows if r["cap"] == cap and r["method"] == method]
            cells = [f"{np.mean([r[k] for r in sel]):.1f}" for k in ("all", "old", "new", "gap")]
            print(f"| {cap} / {2 * cap} | {method} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
