"""Budget study: final D-Acc and D-FGT against the training budget per experience.

Random replay and CARvE (or ``--methods``) with a fixed number of epochs per experience
(``--epochs``, official linear decay) and under the convergence rule with several caps
(``--caps``: the preset's plateau rule, at most that many epochs per experience); same
data, encoder and code as ``icml26 reproduce carve``. Embeddings come from the cache of
that run (``--cache``).

    python benchmarks/carve/budget_study.py [--seeds 2] [--epochs 3 10 30]
    python benchmarks/carve/budget_study.py --preset cmrbench --data DIR --seed-list 7 \\
        --epochs --caps 10 20 40 --cache results/carve/cmrbench
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

from icml26.carve import reproduce as rp
from icml26.shared import Report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="smoke", choices=("smoke", "cmrbench"))
    parser.add_argument("--data", default=None, help="CMRBench folder (cmrbench preset)")
    parser.add_argument("--seeds", type=int, default=2, help="seeds 0..N-1")
    parser.add_argument("--seed-list", type=int, nargs="+", default=None,
                        help="explicit seeds (a development seed), not --seeds")  # fmt: skip
    parser.add_argument("--encoder", default="auto", choices=rp.ENCODERS)
    parser.add_argument("--epochs", type=int, nargs="*", default=[3, 10, 30],
                        help="fixed budgets (epochs per experience, linear decay)")  # fmt: skip
    parser.add_argument("--caps", type=int, nargs="*", default=None,
                        help="rule rows with these caps (default: the preset's)")  # fmt: skip
    parser.add_argument("--methods", default="replay,carve",
                        help="comma-separated short names (icml26 carve reproduce)")  # fmt: skip
    parser.add_argument("--cache", default="results/carve/smoke",
                        help="a run folder whose parent holds embedding-cache/")  # fmt: skip
    parser.add_argument("--out", default="results/carve/budget")
    parser.add_argument("--no-rule", action="store_true",
                        help="only the fixed-epoch rows, not the convergence rule's")  # fmt: skip
    args = parser.parse_args()
    preset = rp.PRESETS[args.preset]
    if args.data is not None:
        preset = replace(preset, source="cmrbench", data_dir=str(args.data))
    methods = tuple(rp.METHOD_ALIASES[m.strip()] for m in args.methods.split(","))
    seeds = args.seed_list if args.seed_list is not None else list(range(args.seeds))
    budgets: list[tuple[str, rp.TrainConfig]] = [
        (f"{e} epochs", replace(preset.train, epochs=e, max_epochs=None)) for e in args.epochs
    ]
    if not args.no_rule:
        low = preset.train.epochs
        for cap in args.caps or [preset.train.max_epochs]:
            budgets.append((f"rule ({low} to {cap})", replace(preset.train, max_epochs=cap)))
    header = ["| budget | method | D-Acc | D-FGT | M-Acc | epochs/experience | stops on plateau |"
              " CPU s |", "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    lines = list(header)
    out = {"seeds": seeds, "preset": args.preset}
    for label, train in budgets:
        config = replace(preset, train=train, methods=methods, encoder=args.encoder)
        c0 = time.process_time()
        report = Report.merge([rp.run(config, s, Path(args.cache)) for s in seeds])
        cpu = time.process_time() - c0
        for m in methods:
            stat = {k: report.stat(m, k, "final") for k in ("D-Acc", "D-FGT", "M-Acc", "epochs")}
            hist = [h for r in report.records if r["method"] == m for h in r["history"]]
            plateau = sum(h["stopping"]["reason"] == "plateau" for h in hist)
            out[f"{label} / {m}"] = {
                **{k: v.values for k, v in stat.items()},
                "epochs_per_experience": [h["epochs"] for h in hist],
                "stopping": [h["stopping"] for h in hist],
                "phase1_stopping": [h["phase1_stopping"] for h in hist],
                "train_errors": [h["train_errors"][-1] for h in hist],
            }
            lines.append(f"| {label} | {m} | " + " | ".join(str(stat[k]) for k in
                         ("D-Acc", "D-FGT", "M-Acc", "epochs"))
                         + f" | {plateau}/{len(hist)} | {cpu:.0f} |")  # fmt: skip
        print("\n".join(lines[-len(methods) :]), flush=True)
        target = Path(args.out)
        target.mkdir(parents=True, exist_ok=True)
        (target / "budget.json").write_text(json.dumps(out, indent=2))
        (target / "budget.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
