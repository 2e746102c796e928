"""PCB-Merging on the Digits-8 smoke suite's experts, beside TIES and task arithmetic.

The smoke preset's mixed-scale suite (same θ_0, heads and plateau-trained experts as
``icml26 reproduce samerging``, which has a PCB row from 0.4.0 on), without the rest of
the smoke run: PCB (ratio 0.1), TIES and task arithmetic, λ on the validation split, test
accuracy, mean ± sd over the seeds. TIES and task arithmetic are recomputed to show that
these are the smoke table's experts (their numbers must equal its rows).

    python benchmarks/samerging/pcb_digits.py --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict

import numpy as np

from icml26.samerging import pcb_merging, task_arithmetic, ties_merging
from icml26.samerging.reproduce import PRESETS, _base, _Suite
from icml26.shared import torch_threads


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--ratio", type=float, help="PCB's kept fraction (default: the preset's)")
    args = ap.parse_args(argv)
    c = PRESETS["smoke"]
    ratio = args.ratio if args.ratio is not None else c.pcb_ratio
    acc, lam = defaultdict(list), defaultdict(list)
    c0 = time.process_time()
    with torch_threads(c.threads):
        tasks, base, _ = _base(c.widths, c.noise, c.data_seed, c.base_seed, c.pretrain)
        for seed in args.seeds:
            suite = _Suite(base, tasks, c, seed, c.unit_spread)
            b, ex = suite.base, suite.experts
            for name, fn, kw in (
                ("Task arithmetic", task_arithmetic, {}),
                ("TIES", ties_merging, {"density": c.ties_density}),
                (f"PCB (ratio {ratio:g})", pcb_merging, {"ratio": ratio}),
            ):
                t0 = time.process_time()
                merged = fn(b, ex, scale=1.0, **kw)
                cpu = time.process_time() - t0
                scale, state = suite.tuned(merged)
                row = suite.row(name, "mixed scale", state)
                acc[name].append(row.metrics["accuracy"].mean)
                lam[name].append(scale)
                print(
                    f"seed {seed} {name}: {acc[name][-1]:.2f} (λ {scale:g}, merge {cpu:.2f} CPU s)"
                )
    print(f"seeds {args.seeds}; CPU {time.process_time() - c0:.0f} s (one torch thread)")
    print("| method | accuracy (%) | λ per seed |")
    print("|---|---|---|")
    for name, v in acc.items():
        sd = np.std(v, ddof=1) if len(v) > 1 else 0.0
        lams = "/".join(f"{x:g}" for x in lam[name])
        print(f"| {name} | {np.mean(v):.1f} ± {sd:.1f} | {lams} |")


if __name__ == "__main__":
    main()
