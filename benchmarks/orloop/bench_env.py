"""Environment steps per second and validated instances generated per second.

- generation: validated instances per second (seed model, sabotage, IIS, three-way
  validation), against the issue's target of 1,000 instances per minute (ratio > 1
  beats it);
- environment: steps per second of :class:`RepairEnv` driven by GreedyDrop and by a
  scripted mix of GET_IIS / CHECK_SLACK / RELAX steps, against the bare solver work
  the same steps need (a HiGHS solve plus ``getIis`` when infeasible) — the ratio is
  the environment's overhead.

Writes results/orloop/bench/env.{json,md}.

    python benchmarks/orloop/bench_env.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from icml26.orloop import (
    Action,
    ActionType,
    GreedyDropAgent,
    RepairEnv,
    compute_iis,
    generate,
    run_episode,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="100 instances instead of 1000")
    parser.add_argument("--out", default="results/orloop/bench")
    args = parser.parse_args()
    n = 100 if args.quick else 1000

    t0 = time.perf_counter()
    c0 = time.process_time()
    instances = list(generate(n, seed=0, milp_fraction=0.3, stream="bench-env"))
    gen_wall = time.perf_counter() - t0
    gen_cpu = time.process_time() - c0
    per_s = n / gen_wall

    lp = [i for i in instances if i.family == "lp"][:100]
    t0 = time.perf_counter()
    steps = 0
    for inst in lp:
        steps += run_episode(GreedyDropAgent(), inst).steps
    greedy_sps = steps / (time.perf_counter() - t0)

    t0 = time.perf_counter()
    steps = 0
    for inst in lp:
        env = RepairEnv(inst, max_steps=4)
        state, _ = env.reset()
        row = state.iis_constraints[0]
        for act in (
            Action(ActionType.GET_IIS),
            Action(ActionType.CHECK_SLACK, target=row),
            Action(ActionType.RELAX_CONSTRAINT, target=row, value=0.01),
        ):
            if env.done:
                break
            env.step(act)
            steps += 1
    mixed_sps = steps / (time.perf_counter() - t0)

    # the bare solver work of one repair step: solve, and an IIS when still infeasible
    t0 = time.perf_counter()
    for inst in lp:
        sol = inst.model.solve()
        if sol.infeasible:
            compute_iis(inst.model)
    bare_sps = len(lp) / (time.perf_counter() - t0)

    rows = {
        "instances": n,
        "generate_wall_s": gen_wall,
        "generate_cpu_s": gen_cpu,
        "instances_per_s": per_s,
        "ratio_vs_1000_per_minute": per_s / (1000 / 60),
        "env_steps_per_s_greedy": greedy_sps,
        "env_steps_per_s_mixed": mixed_sps,
        "bare_solve_plus_iis_per_s": bare_sps,
        "env_overhead_ratio_bare_over_mixed": bare_sps / mixed_sps,
    }
    table = "\n".join(
        [
            "| measure | value |",
            "|---|---|",
            f"| validated instances generated | {n} in {gen_wall:.1f} s wall "
            f"({gen_cpu:.1f} s CPU) |",
            f"| instances per second | {per_s:.1f} (ratio vs 1000/min target: "
            f"{rows['ratio_vs_1000_per_minute']:.2f}) |",
            f"| env steps/s, GreedyDrop episodes (LP) | {greedy_sps:.0f} |",
            f"| env steps/s, GET_IIS/CHECK_SLACK/RELAX mix (LP) | {mixed_sps:.0f} |",
            f"| bare solve + IIS per s (same LPs) | {bare_sps:.0f} |",
            "| ratio bare / env (env overhead) | "
            f"{rows['env_overhead_ratio_bare_over_mixed']:.2f} |",
        ]
    )
    print(table)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "env.json").write_text(json.dumps(rows, indent=2) + "\n")
    (out / "env.md").write_text(table + "\n")


if __name__ == "__main__":
    main()
