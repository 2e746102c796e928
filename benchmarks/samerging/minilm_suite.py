"""The MiniLM suite at a CPU scale: full and PEFT LoRA experts on all-MiniLM-L6-v2.

Three template tasks (``MINILM_CPU``: 128 / 64 / 128 train / val / test sentences each),
heads fitted on the frozen base and never merged, experts stopped by their training-loss
plateau (the cap is far above it), then every merger of ``run_minilm``: task arithmetic
and TIES (λ on validation), SA-Merging (T = 10 and T = 1, λ = 1 and λ on validation),
magnitude × consensus, the LoRA mergers (rank-wise, element-wise, LoRA task arithmetic)
and peft's ``add_weighted_adapter`` (ties). ``--literal`` adds the literal sign reading,
``--peft ties cat`` more peft combinations. Needs the ``minilm`` extra. Prints a table
(mean ± sd over the seeds); ``--out`` writes JSON, rewritten after every seed.

    python benchmarks/samerging/minilm_suite.py --seeds 0 1 2 [--out minilm.json]
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import numpy as np

from icml26.samerging.reproduce import MINILM_CPU, PRESETS, run_minilm
from icml26.shared import quiet_dependencies, torch_threads


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[100])
    ap.add_argument("--literal", action="store_true", help="add the literal sign reading")
    ap.add_argument("--peft", nargs="*", help="peft combinations (default: MINILM_CPU's)")
    ap.add_argument("--cap", type=int, help="experts' step cap (default: MiniLMConfig's)")
    ap.add_argument("--sizes", type=int, nargs=3, help="train, val, test sentences per task")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    mc = replace(MINILM_CPU, literal=args.literal)
    if args.peft is not None:
        mc = replace(mc, peft=tuple(args.peft))
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
    seed_cpu: dict[int, float] = {}
    with torch_threads(1), quiet_dependencies():
        for seed in args.seeds:
            c1 = time.process_time()
            rows, records = run_minilm(mc, config, seed)
            seed_cpu[seed] = time.process_time() - c1
            stops += records
            for r in rows:
                for name, stat in r.metrics.items():
                    per[(r.group, r.method)][name].append(stat.mean)
            if args.out:
                _write(args.out, args.seeds, seed_cpu, per, stops, t0, c0)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(f"CPU per seed (s): {seed_cpu}")
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


def _write(out: Path, seeds, seed_cpu, per, stops, t0, c0) -> None:
    out.write_text(
        json.dumps(
            {
                "seeds": seeds,
                "done": list(seed_cpu),
                "cpu_per_seed_s": seed_cpu,
                "wall_s": time.perf_counter() - t0,
                "cpu_s": time.process_time() - c0,
                "rows": {f"{g} | {m}": dict(v) for (g, m), v in per.items()},
                "stopping": stops,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
