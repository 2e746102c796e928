"""Our vectorised CCM against pyEDM's reference CCM on identical inputs.

Input: the coupled logistic map of Sugihara et al. (2012), N = 1000, E = 2, τ = 1,
library sizes 100, 300, 500, 700, 900, 50 random libraries each, both directions;
and the sardine–anchovy–SST data shipped with pyEDM (E = 3). Reports the largest
|Δρ| between the two implementations and the wall-time ratio (one run, same process).

    python benchmarks/topodistill/bench_ccm_vs_pyedm.py [--quick]

Writes ``results/topodistill/bench/ccm_vs_pyedm.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from icml26.topodistill import ccm, coupled_logistic, load_sardine_anchovy
from icml26.topodistill.baselines import pyedm_ccm


def timed(fn, repeats: int):
    best, out = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def compare(name, x, y, E, libs, samples, repeats, parallel):
    def ours():
        return (
            ccm(x, y, E=E, lib_sizes=libs, samples=samples, seed=1, device="cpu"),
            ccm(y, x, E=E, lib_sizes=libs, samples=samples, seed=2, device="cpu"),
        )

    def peer():
        return pyedm_ccm(x, y, E=E, lib_sizes=libs, samples=samples, seed=1, parallel=parallel)

    ours()  # warm-up (torch kernels, imports) outside the timing
    t_ours, (o_xy, o_yx) = timed(ours, repeats)
    t_peer, (p_xy, p_yx) = timed(peer, repeats)
    delta = max(
        np.max(np.abs(o_xy.mean_skill - p_xy.mean_skill)),
        np.max(np.abs(o_yx.mean_skill - p_yx.mean_skill)),
    )
    return {
        "input": name,
        "pyedm_parallel": parallel,
        "n": int(x.size),
        "E": E,
        "lib_sizes": [int(v) for v in libs],
        "samples": samples,
        "ours_s": t_ours,
        "pyedm_s": t_peer,
        "speedup": t_peer / t_ours,
        "max_abs_delta_rho": float(delta),
        "ours_x:y": o_xy.mean_skill.round(4).tolist(),
        "pyedm_x:y": p_xy.mean_skill.round(4).tolist(),
        "ours_y:x": o_yx.mean_skill.round(4).tolist(),
        "pyedm_y:x": p_yx.mean_skill.round(4).tolist(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="one timing repeat")
    parser.add_argument(
        "--threads", type=int, default=1, help="torch intra-op threads for ours (default 1)"
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    repeats = 1 if args.quick else 3
    system = coupled_logistic(1000, np.random.default_rng(0))
    x, y = system.column("x"), system.column("y")
    libs = [100, 300, 500, 700, 900]
    rows = [
        compare("logistic N=1000", x, y, 2, libs, 50, repeats, parallel=True),
        compare("logistic N=1000", x, y, 2, libs, 50, repeats, parallel=False),
    ]
    sa = load_sardine_anchovy()
    rows.append(
        compare(
            "sardine-anchovy (anchovy, sio_sst)",
            sa.column("anchovy"),
            sa.column("sio_sst"),
            3,
            [20, 40, 60, len(sa) - 2],  # the last: every embedded point, deterministic
            500,
            repeats,
            parallel=False,
        )
    )
    head = "| input | pyEDM workers | ours (s) | pyEDM (s) | speed-up (pyEDM / ours) | max abs Δρ |"
    lines = [head, "|---|---|---|---|---|---|"]
    for r in rows:
        workers = "all cores" if r["pyedm_parallel"] else "1"
        lines.append(
            f"| {r['input']} | {workers} | {r['ours_s']:.3f} | {r['pyedm_s']:.3f} | "
            f"{r['speedup']:.1f}× | {r['max_abs_delta_rho']:.4f} |"
        )
    table = "\n".join(lines)
    print(table)
    for r in rows[1:]:
        print(f"\n{r['input']}: ours x:y {r['ours_x:y']} | pyEDM x:y {r['pyedm_x:y']}")
        print(f"{' ' * len(r['input'])}  ours y:x {r['ours_y:x']} | pyEDM y:x {r['pyedm_y:x']}")
    out = Path("results/topodistill/bench")
    out.mkdir(parents=True, exist_ok=True)
    (out / "ccm_vs_pyedm.json").write_text(json.dumps(rows, indent=2))
    (out / "ccm_vs_pyedm.md").write_text(table + "\n")
    print(f"\nwritten to {out}/ccm_vs_pyedm.json and .md")


if __name__ == "__main__":  # pyEDM's worker processes need this guard
    main()
