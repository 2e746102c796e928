"""Budget study: held-out accuracy of each arm against the step cap and the
training-set size (development seeds, never the evaluation seeds 0-2; the smoke data).

    uv run python benchmarks/geocode/budget_study.py [--caps 150 600] [--sizes 300 600]
        [--seeds 7] [--arms code caption none blind] [--json out.json]

Prints a markdown table (one row per size, cap, arm and seed, with the steps taken,
the stopping reason of the plateau rule and the CPU seconds of training) and the
code − none gap per cell; the smoke preset's budget was frozen from it (README).
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
    ap.add_argument("--caps", type=int, nargs="+", default=[150, 600])
    ap.add_argument("--sizes", type=int, nargs="+", default=[300, 600])
    ap.add_argument("--seeds", type=int, nargs="+", default=[7])
    ap.add_argument("--arms", nargs="+", default=["code", "caption", "none", "blind"])
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    config = PRESETS["smoke"]
    rows = []
    with quiet_dependencies(), torch_threads(1):
        train_set, test_set, textbook, _, _ = _data(config)
        vocab = Vocab.build([*train_set, *textbook])
        print("| train size | step cap | arm | seed | steps | stop | CPU s | accuracy (%) |")
        print("|---|---|---|---|---|---|---|---|")
        for size in args.sizes:
            for cap in args.caps:
                for seed in args.seeds:
                    for arm in args.arms:
                        cfg: AlignConfig = replace(config.align, cap=cap, blind=arm == "blind")
                        t = time.process_time()
                        res = train(
                            train_set[:size],
                            "none" if arm == "blind" else arm,
                            cfg,
                            seed=seed,
                            vocab=vocab,
                        )
                        cpu = time.process_time() - t
                        acc = 100 * evaluate(res, test_set)["accuracy"]
                        s = res.stopping
                        rows.append(
                            {"size": size, "cap": cap, "arm": arm, "seed": seed,
                             "steps": s["steps"], "reason": s["reason"], "cpu_s": cpu,
                             "accuracy": acc}
                        )  # fmt: skip
                        print(f"| {size} | {cap} | {arm} | {seed} | {s['steps']} | "
                              f"{s['reason']} | {cpu:.0f} | {acc:.1f} |", flush=True)  # fmt: skip
                        if args.json:
                            with open(args.json, "w") as fh:
                                json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
