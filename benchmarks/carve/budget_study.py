"""Budget study: final D-Acc and D-FGT against the training budget per experience.

Random replay and CARvE on the smoke hub, with a fixed number of epochs per experience
(3, 10, 30) and with the convergence rule of the smoke preset; same seeds, data and
encoder as ``icml26 reproduce carve``. Embeddings come from that run's cache.

    python benchmarks/carve/budget_study.py [--seeds 2] [--encoder auto] [--epochs 3 10 30]
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

from icml26.carve import reproduce as rp
from icml26.shared import Report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--encoder", default="auto", choices=rp.ENCODERS)
    parser.add_argument("--epochs", type=int, nargs="+", default=[3, 10, 30])
    parser.add_argument("--cache", default="results/carve/smoke",
                        help="folder holding the smoke run's embedding-cache/")  # fmt: skip
    parser.add_argument("--out", default="results/carve/budget")
    parser.add_argument("--no-rule", action="store_true",
                        help="only the fixed-epoch rows, not the convergence rule's")  # fmt: skip
    args = parser.parse_args()
    methods = (rp.REPLAY, rp.METHOD)
    budgets: list[tuple[str, rp.TrainConfig]] = [
        (f"{e} epochs", replace(rp.SMOKE.train, epochs=e, max_epochs=None)) for e in args.epochs
    ]
    if not args.no_rule:
        budgets.append(("rule (3..30)", rp.SMOKE.train))
    lines = ["| budget | method | D-Acc | D-FGT | M-Acc | epochs/experience |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    out = {}
    for label, train in budgets:
        config = replace(rp.SMOKE, train=train, methods=methods, encoder=args.encoder)
        report = Report.merge([rp.run(config, s, Path(args.cache)) for s in range(args.seeds)])
        for m in methods:
            stat = {k: report.stat(m, k, "final") for k in ("D-Acc", "D-FGT", "M-Acc", "epochs")}
            out[f"{label} / {m}"] = {k: v.values for k, v in stat.items()}
            lines.append(f"| {label} | {m} | " + " | ".join(str(stat[k]) for k in
                         ("D-Acc", "D-FGT", "M-Acc", "epochs")) + " |")  # fmt: skip
        print("\n".join(lines[-len(methods) :]), flush=True)
    target = Path(args.out)
    target.mkdir(parents=True, exist_ok=True)
    (target / "budget.json").write_text(json.dumps(out, indent=2))
    (target / "budget.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
