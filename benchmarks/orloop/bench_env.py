"""Environment steps per second and validated instances generated per second.

- generation: validated instances per second (seed model, sabotage, IIS, three-way
  validation), against the issue's target of 1,000 instances per minute (ratio > 1
  beats it);
- environment: steps per second of :class:`RepairEnv` driven by GreedyDrop and by a
  scripted GET_IIS / CHECK_SLACK / RELAX episode, and the CPU of that episode against
  the bare solver work it needs (one HiGHS solve plus ``getIis``) — the ratio is the
  environment's overhead (wall and CPU are both reported: CPU is the figure that
  does not depend on other load on the machine).

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
    t0, c0 = time.perf_counter(), time.process_time()
    steps = 0
    for inst in lp:
        steps += run_episode(GreedyDropAgent(), inst).steps
    greedy_sps = steps / (time.perf_counter() - t0)
    greedy_sps_cpu = steps / (time.process_time() - c0)

    t0, c0 = time.perf_counter(), time.process_time()
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
    mixed_cpu = time.process_time() - c0
    mixed_sps_cpu = steps / mixed_cpu

    # the bare solver work of one repair step: solve, and an IIS when still infeasible
    t0, c0 = time.perf_counter(), time.process_time()
    for inst in lp:
        sol = inst.model.solve()
        if sol.infeasible:
            compute_iis(inst.model)
    bare_sps = len(lp) / (time.perf_counter() - t0)
    bare_cpu = time.process_time() - c0
    bare_sps_cpu = len(lp) / bare_cpu

    rows = {
        "instances": n,
        "generate_wall_s": gen_wall,
        "generate_cpu_s": gen_cpu,
        "instances_per_s": per_s,
        "instances_per_cpu_s": n / gen_cpu,
        "ratio_vs_1000_per_minute": per_s / (1000 / 60),
        "ratio_vs_1000_per_minute_cpu": n / gen_cpu / (1000 / 60),
        "env_steps_per_s_greedy": greedy_sps,
        "env_steps_per_cpu_s_greedy": greedy_sps_cpu,
        "env_steps_per_s_mixed": mixed_sps,
        "env_steps_per_cpu_s_mixed": mixed_sps_cpu,
        "bare_solve_plus_iis_per_s": bare_sps,
        "bare_solve_plus_iis_per_cpu_s": bare_sps_cpu,
        # one scripted episode (GET_IIS, CHECK_SLACK, RELAX: one re-solve + IIS) against
        # one bare solve + IIS of the same model: the environment's overhead factor
        "env_overhead_ratio": mixed_cpu / bare_cpu,
    }
    table = "\n".join(
        [
            "| measure | value |",
            "|---|---|",
            f"| validated instances generated | {n} in {gen_wall:.1f} s wall "
            f"({gen_cpu:.1f} s CPU) |",
            f"| instances per s (wall / CPU) | {per_s:.1f} / {n / gen_cpu:.1f} (ratio vs the "
            f"1000/min target: {rows['ratio_vs_1000_per_minute']:.2f} / "
            f"{rows['ratio_vs_1000_per_minute_cpu']:.2f}) |",
            f"| env steps/s, GreedyDrop episodes, LP (wall / CPU) | {greedy_sps:.0f} / "
            f"{greedy_sps_cpu:.0f} |",
            f"| env steps/s, GET_IIS/CHECK_SLACK/RELAX mix, LP (wall / CPU) | {mixed_sps:.0f} / "
            f"{mixed_sps_cpu:.0f} |",
            f"| bare solve + IIS per s, same LPs (wall / CPU) | {bare_sps:.0f} / "
            f"{bare_sps_cpu:.0f} |",
            "| CPU of a GET_IIS/CHECK_SLACK/RELAX episode / CPU of a bare solve + IIS | "
            f"{rows['env_overhead_ratio']:.2f} |",
        ]
    )
    print(table)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "env.json").write_text(json.dumps(rows, indent=2) + "\n")
    (out / "env.md").write_text(table + "\n")


if __name__ == "__main__":
    main()
