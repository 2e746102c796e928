"""Budget study: TeamTR and naive sequential (GRPO) at 2× and 4× the smoke rollout budget
(1× is the smoke table), and the off-preset check (other seeds, random router, δ = 0.05).

    python benchmarks/teamtr/budget_study.py budget [--seeds 0 1]
    python benchmarks/teamtr/budget_study.py offpreset [--seeds 10 11 12]

Writes results/teamtr/<study>/report.json and prints the table and the claim checks.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from icml26.shared import Report
from icml26.teamtr.reproduce import PRESETS, judge, run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("study", choices=["budget", "offpreset"])
    ap.add_argument("--seeds", type=int, nargs="+")
    ap.add_argument("--out", default="results/teamtr")
    args = ap.parse_args()
    smoke = PRESETS["smoke"]
    if args.study == "budget":
        cfg = dataclasses.replace(
            smoke, budget_multipliers=(2, 4), methods=("teamtr", "naive_grpo")
        )
        seeds = args.seeds or [0, 1]
    else:
        update = dataclasses.replace(smoke.train.update, delta=0.05)
        cfg = dataclasses.replace(
            smoke, router="random", methods=("teamtr", "naive_grpo", "shared", "bc"),
            train=dataclasses.replace(smoke.train, update=update),
        )  # fmt: skip
        seeds = args.seeds or [10, 11, 12]
    out = Path(args.out) / args.study
    out.mkdir(parents=True, exist_ok=True)
    reports = []
    for seed in seeds:
        reports.append(run(cfg, seed, out))
        merged = Report.merge(reports)
        print(f"after seed {seed}:\n{merged.table_markdown()}", flush=True)
    (out / "report.json").write_text(merged.to_json())
    for c in judge(merged, cfg):
        print("-", "[x]" if c.holds else "[ ]", c.name, "—", c.detail)


if __name__ == "__main__":
    main()
