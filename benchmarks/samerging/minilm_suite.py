"""The MiniLM suite at a CPU scale: full and PEFT LoRA experts on all-MiniLM-L6-v2.

Four template tasks (``MiniLMConfig`` defaults: 512 / 128 / 256 train / val / test
sentences each), heads fitted on the frozen base and never merged, experts stopped by a
training-loss plateau (or their cap), then every merger of ``run_minilm``: task
arithmetic and TIES (λ on validation), SA-Merging (both sign readings, T = 1, λ = 1 and
λ on validation), magnitude × consensus, the LoRA mergers (rank-wise, element-wise, LoRA
task arithmetic) and peft's ``add_weighted_adapter`` (ties, cat). Needs the ``minilm``
extra. Prints a table (mean ± sd over the seeds) and writes JSON with ``--out``.

    python benchmarks/samerging/minilm_suite.py [--seeds 100] [--out minilm.json]
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import numpy as np

from icml26.samerging.reproduce import PRESETS, MiniLMConfig, run_minilm
from icml26.shared import quiet_dependencies, torch_threads


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[100])
    ap.add_argument("--no-literal", action="store_true", help="skip the literal sign reading")
    ap.add_argument("--cap", type=int, help="experts' step cap (default: MiniLMConfig's)")
    ap.add_argument("--sizes", type=int, nargs=3, help="train, val, test sentences per task")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    mc = MiniLMConfig(literal=not args.no_literal)
    if args.cap:
        mc = replace(
            mc, expert=replace(mc.expert, cap=args.cap), lora=replace(mc.lora, cap=args.cap)
        )
    if args.sizes:
        mc = replace(mc, sizes=tuple(args.sizes))
    config = PRESETS["smoke"]
    per: dict = defaultdict(lambda: defaultdict(list))
    stops: list[dict] = []
    t0, c0 = time.perf_counter(), time.process_time()
    with torch_threads(1), quiet_dependencies():
        for seed in args.seeds:
            rows, records = run_minilm(mc, config, seed)
            stops += records
            for r in rows:
                for name, stat in r.metrics.items():
                    per[(r.group, r.method)][name].append(stat.mean)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(f"seeds {args.seeds}; wall {wall:.0f} s, CPU {cpu:.0f} s (one torch thread)")
    print("| group | method | accuracy (%) | normalised (%) | λ | other |")
    print("|---|---|---|---|---|---|")
    for (group, method), metrics in per.items():

        def fmt(name, metrics=metrics):
            v = metrics.get(name)
            if not v:
                return ""
            return f"{np.mean(v):.1f} ± {np.std(v, ddof=1) if len(v) > 1 else 0:.1f}"

        lam = metrics.get("scale")
        lam = "/".join(f"{x:g}" for x in lam) if lam else ""
        other = ", ".join(
            f"{k} {np.mean(v):.3g}"
            for k, v in metrics.items()
            if k not in ("accuracy", "normalised", "scale")
        )
        print(f"| {group} | {method} | {fmt('accuracy')} | {fmt('normalised')} | {lam} | {other} |")
    reasons = defaultdict(list)
    for s in stops:
        reasons[s["suite"]].append((s["steps"], s["reason"]))
    for suite, v in reasons.items():
        steps = [a for a, _ in v]
        plateau = np.mean([r == "plateau" for _, r in v])
        print(
            f"{suite}: steps {np.mean(steps):.0f} (min {min(steps)}, max {max(steps)}), "
            f"plateau {plateau:.2f}"
        )
    if args.out:
        args.out.write_text(
            json.dumps(
                {
                    "seeds": args.seeds,
                    "wall_s": wall,
                    "cpu_s": cpu,
                    "rows": {f"{g} | {m}": dict(v) for (g, m), v in per.items()},
                    "stopping": stops,
                },
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
