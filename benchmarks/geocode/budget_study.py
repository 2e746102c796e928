"""Budget study: held-out accuracy of each arm against the training steps and the
training-set size (development seeds, never the evaluation seeds 0-2; the smoke data).

    python benchmarks/geocode/budget_study.py [--steps 75 150 300] [--sizes 300 600 1200 2400]
        [--seeds 7] [--arms none blind code caption] [--pool N] [--json out.json]

The training sets are nested: the first ``size`` problems of one GeoCode-tier train
set of ``max(--sizes)`` (or ``--pool``) problems drawn with the smoke preset's data
seed. Generation keeps problems in program-index order, so the first n problems of any
such set are the same (the first 600 are the smoke train set). The test set is the
smoke preset's 200 held-out-composition problems. One training run per (size, seed,
arm) with the step cap at the largest budget; the test set is scored at every budget
in ``--steps`` on the way (a budget of 150 steps is the model after 150 steps of the
same run). The plateau rule of the smoke preset stays on: a run that plateaus earlier
is scored at the step it stops.

Before the arms of each (size, seed), the annotation probe (a CNN that only reads the
two givens' values) is trained with the same rule and cap; every arm's accuracy is also
reported on the test images where the probe reads both givens and on the others, and
the code arm's share of test images whose givens it decodes right (in an IR that
parses, and anywhere in its decoded tokens). Prints a markdown table (CPU seconds
include the scoring).
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace

import numpy as np

from icml26.geocode.align import AlignConfig, Vocab, evaluate, train
from icml26.geocode.baselines import AnnotationProbe
from icml26.geocode.reproduce import PRESETS, _data
from icml26.shared import Plateau, quiet_dependencies, torch_threads

EVALUATION_SEEDS = (0, 1, 2)


def _subset_mean(items: list[bool], mask: list[bool], want: bool) -> float:
    sel = [c for c, m in zip(items, mask, strict=True) if m == want]
    return 100 * float(np.mean(sel)) if sel else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, nargs="+", default=[75, 150, 300])
    ap.add_argument("--sizes", type=int, nargs="+", default=[300, 600, 1200, 2400])
    ap.add_argument("--seeds", type=int, nargs="+", default=[7])
    ap.add_argument("--arms", nargs="+", default=["none", "blind", "code", "caption"])
    ap.add_argument(
        "--pool",
        type=int,
        default=None,
        help="size of the train set to slice (default: the largest size; name a larger "
        "cached one to reuse it: its first n problems are the same)",
    )
    ap.add_argument("--no-probe", action="store_true")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    if set(args.seeds) & set(EVALUATION_SEEDS):
        ap.error(f"seeds {EVALUATION_SEEDS} are the evaluation seeds; use development seeds")
    if min(args.sizes) < 1 or min(args.steps) < 1:
        ap.error("sizes and steps must be positive")
    bad = set(args.arms) - {"none", "blind", "code", "caption"}
    if bad:
        ap.error(f"unknown arms {sorted(bad)}")
    config = PRESETS["smoke"]
    budgets = sorted(set(args.steps))
    pool = max(max(args.sizes), config.n_train, args.pool or 0)
    rows: list[dict] = []

    def dump() -> None:
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(rows, fh, indent=1)

    with quiet_dependencies(), torch_threads(1):
        t0 = time.process_time()
        train_set, test_set, textbook, funnel, _ = _data(replace(config, n_train=pool))
        print(
            f"data: {len(train_set)} train problems ({funnel.programs} programs), "
            f"{len(test_set)} test; {time.process_time() - t0:.0f} CPU-s",
            flush=True,
        )
        vocab = Vocab.build([*train_set, *textbook])
        print("| train size | arm | seed | steps | stop | CPU s | accuracy (%) | "
              "probe reads / fails (%) | givens decoded: parsed IR / tokens (%) |")  # fmt: skip
        print("|---|---|---|---|---|---|---|---|---|", flush=True)
        a = config.align
        for size in args.sizes:
            data = train_set[:size]
            for seed in args.seeds:
                read = [True] * len(test_set)
                if not args.no_probe:
                    t = time.process_time()
                    acc, stop = AnnotationProbe.fit_and_score(
                        data,
                        test_set,
                        seed=seed,
                        rule=Plateau(a.window, a.patience, a.min_delta, budgets[-1]),
                        per_item=True,
                    )
                    read = stop.pop("read_items")
                    cpu = time.process_time() - t
                    rows.append({"size": size, "arm": "probe", "seed": seed,
                                 "steps": stop["steps"], "reason": stop["reason"],
                                 "cpu_s": cpu, "accuracy": 100 * acc})  # fmt: skip
                    print(
                        f"| {size} | probe (both givens) | {seed} | {stop['steps']} | "
                        f"{stop['reason']} | {cpu:.0f} | {100 * acc:.1f} | | |",
                        flush=True,
                    )
                    dump()
                for arm in args.arms:
                    cfg: AlignConfig = replace(a, cap=budgets[-1], blind=arm == "blind")
                    t = time.process_time()

                    def score(step, res, size=size, arm=arm, seed=seed, t=t, read=read):
                        if step not in budgets and not res.stopping.get("reason"):
                            return
                        s = evaluate(res, test_set, per_item=True)
                        items = s.pop("correct_items")
                        acc = 100 * s["accuracy"]
                        on, off = (_subset_mean(items, read, w) for w in (True, False))
                        reason = res.stopping.get("reason") or "-"
                        cpu = time.process_time() - t
                        row = {"size": size, "arm": arm, "seed": seed, "steps": step,
                               "reason": reason, "cpu_s": cpu, "accuracy": acc,
                               "acc_probe_reads": on, "acc_probe_fails": off}  # fmt: skip
                        if arm == "code":
                            row["givens_decoded"] = 100 * s["annotation_rate"]
                            row["givens_in_tokens"] = 100 * s["givens_token_rate"]
                            row["parse_rate"] = s["parse_rate"]
                        rows.append(row)
                        given = (
                            f"{row['givens_decoded']:.1f} / {row['givens_in_tokens']:.1f}"
                            if arm == "code"
                            else ""
                        )
                        print(
                            f"| {size} | {arm} | {seed} | {step} | {reason} | {cpu:.0f} | "
                            f"{acc:.1f} | {on:.1f} / {off:.1f} | {given} |",
                            flush=True,
                        )
                        dump()

                    train(
                        data,
                        "none" if arm == "blind" else arm,
                        cfg,
                        seed=seed,
                        vocab=vocab,
                        on_step=score,
                    )
        print(f"total {time.process_time() - t0:.0f} CPU-s", flush=True)


if __name__ == "__main__":
    main()
