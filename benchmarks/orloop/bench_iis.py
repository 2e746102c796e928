"""IIS time and size: HiGHS (``getIis``, iis_strategy = 4) vs the deletion filter.

Both run on the same generated instances in one process. Prints a table with the
time ratio (deletion filter / HiGHS) and how often the two IISs have the same rows
(IISs are not unique, so a mismatch is an alternative IIS, not an error), and
writes results/orloop/bench/iis.{json,md}.

    python benchmarks/orloop/bench_iis.py [--quick] [--n 400]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from icml26.orloop import deletion_filter, generate, highs_iis


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="60 instances instead of 400")
    parser.add_argument("--n", type=int, default=None)
    parser.add_argument("--out", default="results/orloop/bench")
    args = parser.parse_args()
    n = args.n or (60 if args.quick else 400)
    instances = list(generate(n, seed=0, milp_fraction=0.25, stream="bench-iis"))
    rows = []
    for family in ("lp", "milp"):
        items = [i for i in instances if i.family == family]
        t_h, t_d, s_h, s_d, same, valid_h = [], [], [], [], 0, 0
        c_h, c_d = [], []
        for inst in items:
            t0, c0 = time.perf_counter(), time.process_time()
            h = highs_iis(inst.model)
            t1, c1 = time.perf_counter(), time.process_time()
            d = deletion_filter(inst.model)
            t2, c2 = time.perf_counter(), time.process_time()
            t_h.append(t1 - t0)
            t_d.append(t2 - t1)
            c_h.append(c1 - c0)
            c_d.append(c2 - c1)
            valid_h += h.valid
            if h.valid:
                s_h.append(h.size)
            s_d.append(d.size)
            same += h.valid and set(h.rows) == set(d.rows)
        rows.append(
            {
                "family": family,
                "instances": len(items),
                "highs_ms_mean": 1000 * statistics.mean(t_h),
                "highs_ms_max": 1000 * max(t_h),
                "highs_cpu_ms_mean": 1000 * statistics.mean(c_h),
                "deletion_filter_cpu_ms_mean": 1000 * statistics.mean(c_d),
                "deletion_filter_ms_mean": 1000 * statistics.mean(t_d),
                "time_ratio_df_over_highs": statistics.mean(t_d) / statistics.mean(t_h),
                "highs_valid": valid_h / len(items),
                "highs_size_mean": statistics.mean(s_h) if s_h else float("nan"),
                "deletion_filter_size_mean": statistics.mean(s_d),
                "same_rows": same / len(items),
            }
        )
    head = (
        "| family | n | HiGHS ms wall (mean/max) | HiGHS ms CPU | deletion filter ms wall / CPU "
        "| ratio DF/HiGHS "
        "| HiGHS valid | size HiGHS / DF | same rows |"
    )
    lines = [head, "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['family']} | {r['instances']} "
            f"| {r['highs_ms_mean']:.2f} / {r['highs_ms_max']:.2f} "
            f"| {r['highs_cpu_ms_mean']:.2f} "
            f"| {r['deletion_filter_ms_mean']:.2f} / {r['deletion_filter_cpu_ms_mean']:.2f} "
            f"| {r['time_ratio_df_over_highs']:.2f} "
            f"| {r['highs_valid']:.2f} "
            f"| {r['highs_size_mean']:.2f} / {r['deletion_filter_size_mean']:.2f} "
            f"| {r['same_rows']:.2f} |"
        )
    table = "\n".join(lines)
    print(table)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "iis.json").write_text(json.dumps({"n": n, "rows": rows}, indent=2) + "\n")
    (out / "iis.md").write_text(table + "\n")


if __name__ == "__main__":
    main()
