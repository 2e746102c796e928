"""Budget study: concept accuracy of each method against the training cap and N.

Runs the smoke preset's task and models on development seeds (default 10; the
evaluation seeds are 0-2) with the plateau rule unchanged and the cap as given. Each
model is trained once per cap and sampled at N = ``--steps`` and at every N of
``--sweep`` (10 ... 200 by default). One JSON record per (cap, method, N) is appended to
results/smoothie/budget/budget.jsonl as each model finishes, so a long run can be read
early. Usage:

    python benchmarks/smoothie/budget_study.py --caps 3000 --seeds 10 \
        --methods smoothie embedding simplex masked ar --sweep 10 20 50 100 200

The methods of a cap train in one ``run_task`` call, as in the preset (the spaces as one
batched ensemble, 0.9.0); ``--separate`` trains each method in its own call instead (so
each space alone, the code path before 0.9.0).

``--batch`` changes the batch size (the cost study of 0.5.0), ``--patience`` the plateau
rule's patience (e.g. 1000: off, the cap decides); ``--task key=value ...``
overrides fields of the preset's :class:`SynonymTask` (the task design of 0.6.0, e.g.
``--task context_maps=8 n_train=5000``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from dataclasses import replace
from pathlib import Path

from icml26.shared import numpy_rng, quiet_dependencies, torch_threads
from icml26.smoothie.data import synonym_task
from icml26.smoothie.reproduce import NAMES, PRESETS, run_task


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--caps", type=int, nargs="+", default=[400, 800, 1600])
    parser.add_argument("--seeds", type=int, nargs="+", default=[10])
    parser.add_argument("--methods", nargs="+", default=["smoothie", "embedding", "simplex"])
    parser.add_argument("--steps", type=int, default=50, help="N of the main sample")
    parser.add_argument(
        "--sweep", type=int, nargs="*", default=[10, 20, 50, 100, 200], help="extra N"
    )
    parser.add_argument("--batch", type=int, default=None, help="batch size (preset: 64)")
    parser.add_argument(
        "--patience", type=int, default=None, help="plateau patience (preset: 3; large = off)"
    )
    parser.add_argument("--task", nargs="*", default=[], help="SynonymTask overrides key=value")
    parser.add_argument("--preset", default="smoke", help="the preset to start from")
    parser.add_argument("--out", default="results/smoothie/budget")
    parser.add_argument(
        "--separate", action="store_true", help="one run_task per method (no ensemble)"
    )
    args = parser.parse_args()
    unknown = sorted(set(args.methods) - set(NAMES))
    if unknown:
        parser.error(f"unknown methods {unknown}; use {sorted(NAMES)}")
    base = PRESETS[args.preset]
    if args.task:
        fields = {f.name: f.type for f in dataclasses.fields(base.task)}
        over = {}
        for item in args.task:
            key, _, value = item.partition("=")
            if key not in fields or not value:
                parser.error(f"--task expects key=value with key in {sorted(fields)}")
            over[key] = value if key == "transform" else type(getattr(base.task, key))(value)
        base = replace(base, task=replace(base.task, **over))
    if args.batch is not None:
        base = replace(base, train=replace(base.train, batch_size=args.batch))
    if args.patience is not None:
        base = replace(base, train=replace(base.train, patience=args.patience))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "budget.jsonl"
    with torch_threads(1), quiet_dependencies():
        for seed in args.seeds:
            data = synonym_task(base.task, numpy_rng(seed, "task"))
            for cap in args.caps:
                calls = [(m,) for m in args.methods] if args.separate else [tuple(args.methods)]
                for methods in calls:
                    config = replace(
                        base,
                        train=replace(base.train, cap=cap),
                        methods=methods,
                        steps=args.steps,
                        mbr=0,
                        sweep_steps=tuple(args.sweep),
                    )
                    c0 = time.process_time()
                    rows, records = run_task(config, data, seed, f"cap={cap}")
                    cpu = time.process_time() - c0
                    row_cpu = {
                        (r.method, r.group): r.metrics["cpu_seconds"].mean
                        for r in rows
                        if "cpu_seconds" in r.metrics
                    }
                    for rec in records:
                        if (rec["method"], rec["group"]) in row_cpu:
                            rec["cpu_seconds"] = row_cpu[(rec["method"], rec["group"])]
                        group = rec["group"]
                        n = int(group.split("N=")[1]) if "N=" in group else args.steps
                        rec.update(
                            cap=cap,
                            steps_n=n,
                            cpu_seconds_with_sweep=cpu,
                            batch_size=base.train.batch_size,
                            patience=base.train.patience,
                            task=dataclasses.asdict(base.task),
                        )
                        with path.open("a", encoding="utf-8") as f:
                            f.write(json.dumps(rec) + "\n")
                        print(
                            f"seed {seed} cap {cap} N {n} {rec['method']}: concept "
                            f"{rec.get('concept_accuracy', float('nan')):.1f} stop "
                            f"{rec.get('stopping', {}).get('reason')} "
                            f"{rec.get('stopping', {}).get('steps')} cpu "
                            f"{rec.get('cpu_seconds', cpu):.0f}",
                            flush=True,
                        )


if __name__ == "__main__":
    main()
