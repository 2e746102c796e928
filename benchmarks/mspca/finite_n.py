"""The finite-n study: MS-PCA's failure rate against n and π (both variants, both votes).

Writes results/mspca/finite_n/finite_n.{json,md}. Usage:
    python benchmarks/mspca/finite_n.py [--ns 250 500 1000] [--trials 400] [--seed 0]
        [--offset 0] [--chunk 20] [--one-thread]
(--trials takes one value, or one per n: --ns 250 1000 --trials 400 100; without it, the
``paper`` preset's count at each n: 1000 / 800 / 600 / 400 at n = 250 / 500 / 1000 / 2000,
which gives ±3 points at the failure rates measured there, and 400 at any other n)
Each (n, π) cell appends to the JSON as it finishes, with every trial's alignment, so a
long run can be read early. ``--offset T`` runs trials T, T+1, … of the same cells: new
draws that extend an earlier run of T trials (same seed and chunk). ``--one-thread``
pins the process to one core with one thread per library: on a shared machine the thread
pools otherwise spend several times the CPU time on the same work. On a CPU prefer ``--chunk 1``: a
batch's Krylov while-loop runs until its slowest trial has converged (every trial keeps
its own result, so only the cost changes): at n = 2000, 100 trials in batches of 10 had
not finished after 370 CPU-seconds, where one trial alone takes 2.1. The chunk is part
of the key layout: an ``--offset`` run must use the chunk of the run it extends.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

if "--one-thread" in sys.argv:  # before JAX and numpy are imported
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "")
        + " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
    )
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = "1"
    # XLA keeps a pool of compute threads whatever the flags: pin the process to one core
    # (as `taskset -c`) so that they share it instead of spinning against other jobs.
    if hasattr(os, "sched_setaffinity"):  # Linux
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[-1]})

import jax

from icml26.mspca.finite_n import VARIANTS, FiniteN, run_cell, summarize
from icml26.shared import jax_key, quiet_dependencies


def table(cells: list[dict]) -> str:
    lines = [
        "| n | d | π | " + " | ".join(VARIANTS) + " |",
        "|---|---|---|" + "---|" * len(VARIANTS),
    ]
    for cell in cells:
        parts = []
        for name in VARIANTS:
            s = cell["methods"][name]
            parts.append(
                f"{s['failure_rate']:.1%} [{s['ci_low']:.1%}, {s['ci_high']:.1%}]"
                f" (median {s['median']:.3f}, mean {s['mean']:.3f})"
            )
        lines.append(
            f"| {cell['n']} | {cell['d']} | {cell['fraction']:.0%} | " + " | ".join(parts) + " |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ns", type=int, nargs="+", default=[250, 500, 1000])
    parser.add_argument("--fractions", type=float, nargs="+", default=[0.05, 0.10, 0.15, 0.20])
    parser.add_argument("--trials", type=int, nargs="+", help="per cell: one value, or one per n")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--offset", type=int, default=0, help="index of the first trial")
    parser.add_argument("--chunk", type=int, default=20, help="trials per compiled batch")
    parser.add_argument("--one-thread", action="store_true", help="one core, one thread each")
    parser.add_argument("--out", default="results/mspca/finite_n")
    args = parser.parse_args()
    if args.trials is None:
        preset = FiniteN()
        args.trials = [preset.trials_at(n) if n in preset.ns else 400 for n in args.ns]
    if len(args.trials) not in (1, len(args.ns)):
        parser.error("--trials takes one value or one per --ns value")
    per_n = args.trials * len(args.ns) if len(args.trials) == 1 else args.trials
    trials = dict(zip(args.ns, per_n, strict=True))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    root = jax_key(args.seed, "mspca-finite-n")
    cells = []
    with quiet_dependencies():
        for n in args.ns:
            study = FiniteN(
                ns=(n,), fractions=tuple(args.fractions), trials=trials[n],
                chunk=min(args.chunk, trials[n]),
            )  # fmt: skip
            for fraction in study.fractions:
                t0, c0 = time.perf_counter(), time.process_time()
                key = jax.random.fold_in(jax.random.fold_in(root, n), round(fraction * 1e4))
                aligns = run_cell(key, study, n, fraction, offset=args.offset)
                cells.append({
                    "n": n, "d": max(round(study.c * n), 2), "fraction": fraction,
                    "first_trial": args.offset, "chunk": study.chunk,
                    "seconds": time.perf_counter() - t0, "cpu_seconds": time.process_time() - c0,
                    "methods": {name: summarize(a) for name, a in aligns.items()},
                    "alignments": {name: a.tolist() for name, a in aligns.items()},
                })  # fmt: skip
                payload = {"c": FiniteN.c, "seed": args.seed, "failure_below": 0.5, "cells": cells}
                (out / "finite_n.json").write_text(json.dumps(payload, indent=2))
                (out / "finite_n.md").write_text(table(cells) + "\n")
                print(table(cells[-1:]).splitlines()[-1], flush=True)


if __name__ == "__main__":
    main()
