"""Budget study: held-out accuracy of each arm against the training steps and the
training-set size (development seeds, never the evaluation seeds 0-2; the smoke data).

    python benchmarks/geocode/budget_study.py [--steps 75 150 300 600] [--sizes 300 600]
        [--seeds 7] [--arms code caption none blind] [--json out.json]

One training run per (size, arm, seed) with the step cap at the largest budget; the
held-out test set is scored at every budget in ``--steps`` on the way (so a budget of
150 steps is the model after 150 steps of the same run). The plateau rule of the smoke
preset stays on: a run that plateaus earlier is scored at its last step for the larger
budgets. Prints a markdown table (steps, stopping reason, CPU seconds, accuracy).
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace

from icml26.geocode.align import AlignConfig, Vocab, evaluate, train
from icml26.geocode.reproduce import PRESETS, _data
from icml26.shared import quiet_dependencies, torch_threads


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, nargs="+", default=[75, 150, 300, 600])
    ap.add_argument("--sizes", type=int, nargs="+", default=[300, 600])
    ap.add_argument("--seeds", type=int, nargs="+", default=[7])
    ap.add_argument("--arms", nargs="+", default=["code", "caption", "none", "blind"])
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    config = PRESETS["smoke"]
    budgets = sorted(set(args.steps))
    rows = []
    with quiet_dependencies(), torch_threads(1):
        train_set, test_set, textbook, _, _ = _data(config)
        vocab = Vocab.build([*train_set, *textbook])
        print("| train size | arm | seed | steps | stop | CPU s (train + scoring) | accuracy (%) |")
        print("|---|---|---|---|---|---|---|", flush=True)
        for size in args.sizes:
            for seed in args.seeds:
                for arm in args.arms:
                    cfg: AlignConfig = replace(config.align, cap=budgets[-1], blind=arm == "blind")
                    t = time.process_time()

                    def score(step, res, size=size, arm=arm, seed=seed, t=t):
                        if step not in budgets and not res.stopping.get("reason"):
                            return
                        acc = 100 * evaluate(res, test_set)["accuracy"]
                        reason = res.stopping.get("reason") or "-"
                        cpu = time.process_time() - t
                        rows.append(
                            {"size": size, "arm": arm, "seed": seed, "steps": step,
                             "reason": reason, "cpu_s": cpu, "accuracy": acc}
                        )  # fmt: skip
                        print(f"| {size} | {arm} | {seed} | {step} | {reason} | {cpu:.0f} | "
                              f"{acc:.1f} |", flush=True)  # fmt: skip
                        if args.json:
                            with open(args.json, "w") as fh:
                                json.dump(rows, fh, indent=1)

                    train(
                        train_set[:size],
                        "none" if arm == "blind" else arm,
                        cfg,
                        seed=seed,
                        vocab=vocab,
                        on_step=score,
                    )


if __name__ == "__main__":
    main()
