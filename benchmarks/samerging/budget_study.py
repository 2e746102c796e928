"""Budget study: merged accuracy against the experts' fine-tuning budget (development seeds).

The smoke suite (Digits-8, mixed-scale base) with the experts' step cap varied; every
expert still stops by its training-loss plateau when that comes first, and the steps it
took are recorded. For each cap: the mean test accuracy of the base with task heads, the
individual experts, task arithmetic and TIES (λ on validation), magnitude × consensus
and SA-Merging (λ = 1 and λ on validation). A second table varies T at the smoke cap.

    python benchmarks/samerging/budget_study.py [--seeds 100 101] [--caps 25 50 100 200 400]
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from icml26.samerging.baselines import task_arithmetic, ties_merging
from icml26.samerging.merge import sa_merge
from icml26.samerging.reproduce import PRESETS, _base, _Suite
from icml26.shared import quiet_dependencies, torch_threads


def one(config, seed: int) -> dict:
    tasks, base, _ = _base(
        config.widths, config.noise, config.data_seed, config.base_seed, config.pretrain
    )
    suite = _Suite(base, tasks, config, seed, config.unit_spread)
    b, ex = suite.base, suite.experts

    def acc(state):
        return suite.row("", "", state).metrics["accuracy"].mean

    out = {
        "steps": float(np.mean([s["steps"] for s in suite.stopping])),
        "plateau": float(np.mean([s["reason"] == "plateau" for s in suite.stopping])),
        "experts": 100 * float(suite.expert_acc.mean()),
        "base": acc(b),
        "TA": acc(suite.tuned(task_arithmetic(b, ex, scale=1.0))[1]),
        "TIES": acc(suite.tuned(ties_merging(b, ex, scale=1.0))[1]),
    }
    mag = sa_merge(b, ex, path=suite.path, score="magnitude").state_dict
    out["mag×cons"] = acc(mag)
    sa = sa_merge(b, ex, path=suite.path).state_dict
    out["SA"] = acc(sa)
    out["SA λ val"] = acc(suite.tuned(sa)[1])
    out["T"] = {
        t: acc(sa_merge(b, ex, path=suite.path, iterations=t).state_dict) for t in (1, 3, 10, 20)
    }
    return out


def prune_check(config, seed: int, prunes) -> dict:
    """SA-Merging and magnitude × consensus (T = 10, λ = 1 and λ on validation) per p."""
    tasks, base, _ = _base(
        config.widths, config.noise, config.data_seed, config.base_seed, config.pretrain
    )
    suite = _Suite(base, tasks, config, seed, config.unit_spread)
    out = {}
    for p in prunes:
        for name, score in (("SA", "synflow"), ("mag×cons", "magnitude")):
            merged = sa_merge(suite.base, suite.experts, path=suite.path, prune=p, score=score)
            state = merged.state_dict
            out[(p, name)] = (
                suite.row("", "", state).metrics["accuracy"].mean,
                suite.row("", "", suite.tuned(state)[1]).metrics["accuracy"].mean,
            )
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", default=[100, 101])
    ap.add_argument("--caps", type=int, nargs="+", default=[25, 50, 100, 200, 400])
    ap.add_argument("--out", type=Path, default=Path("results/samerging/budget"))
    ap.add_argument(
        "--prunes",
        type=float,
        nargs="*",
        default=[],
        help="instead: SA-Merging vs magnitude × consensus at these p (smoke cap)",
    )
    args = ap.parse_args()
    if args.prunes:
        with quiet_dependencies(), torch_threads(1):
            res = [prune_check(PRESETS["smoke"], s, args.prunes) for s in args.seeds]
        print("| p | SA λ=1 | SA λ val | mag×cons λ=1 | mag×cons λ val |")
        print("|---|---|---|---|---|")
        for p in args.prunes:
            cells = []
            for name in ("SA", "mag×cons"):
                for i in (0, 1):
                    cells.append(f"{np.mean([r[(p, name)][i] for r in res]):.1f}")
            print(f"| {p:g} | " + " | ".join(cells) + " |")
        return
    args.out.mkdir(parents=True, exist_ok=True)
    rows = {}
    t0 = time.process_time()
    with quiet_dependencies(), torch_threads(1):
        for cap in args.caps:
            base = PRESETS["smoke"]
            config = replace(base, expert=replace(base.expert, cap=cap))
            rows[cap] = [one(config, s) for s in args.seeds]
    keys = ["steps", "plateau", "experts", "base", "TA", "TIES", "mag×cons", "SA", "SA λ val"]
    lines = ["| expert cap | " + " | ".join(keys) + " |", "|" + "---|" * (len(keys) + 1)]
    for cap, res in rows.items():
        cells = []
        for k in keys:
            v = np.array([r[k] for r in res])
            cells.append(f"{v.mean():.1f} ± {v.std(ddof=1) if len(v) > 1 else 0:.1f}")
        lines.append(f"| {cap} | " + " | ".join(cells) + " |")
    lines += ["", "| expert cap | " + " | ".join(f"SA T={t}" for t in (1, 3, 10, 20)) + " |",
              "|---|---|---|---|---|"]  # fmt: skip
    for cap, res in rows.items():
        cells = [f"{np.mean([r['T'][t] for r in res]):.1f}" for t in (1, 3, 10, 20)]
        lines.append(f"| {cap} | " + " | ".join(cells) + " |")
    lines.append(f"\nCPU time {time.process_time() - t0:.0f} s, seeds {args.seeds}")
    text = "\n".join(lines)
    print(text)
    (args.out / "budget.md").write_text(text + "\n")
    (args.out / "budget.json").write_text(
        json.dumps({str(k): v for k, v in rows.items()}, indent=1)
    )


if __name__ == "__main__":
    main()
