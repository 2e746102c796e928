"""Our vectorised CCM against pyEDM's reference CCM on identical inputs.

Regimes (both directions each, E + 1 simplex neighbours, no exclusion):

- small libraries: coupled logistic map (Sugihara et al. 2012), N = 1000, E = 2,
  libraries 10, 25, 50, 100, 100 random libraries each;
- the brief's reference input: the same map, libraries 100 … 900, 50 each;
- a long series: N = 4000, E = 3, libraries 400 … 3600, 20 each;
- the sardine–anchovy–SST data shipped with pyEDM, E = 3, 500 libraries each.

Both sides are warmed up once on the input before timing; timings alternate between
the two and keep the fastest of ``repeats`` (wall and CPU seconds of this process).
pyEDM runs in-process (``parallel=False``): its worker pool mostly measures process
start-up on a small machine. Reports the largest |Δρ| between the two.

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

from icml26.shared import quiet_dependencies
from icml26.topodistill import ccm, coupled_logistic, load_sardine_anchovy
from icml26.topodistill.baselines import pyedm_ccm


def timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, out


def compare(name, x, y, E, libs, samples, repeats):
    def ours():
        return (
            ccm(x, y, E=E, lib_sizes=libs, samples=samples, seed=1, device="cpu"),
            ccm(y, x, E=E, lib_sizes=libs, samples=samples, seed=2, device="cpu"),
        )

    def peer():
        return pyedm_ccm(x, y, E=E, lib_sizes=libs, samples=samples, seed=1, parallel=False)

    ours()  # warm-up of both sides (imports, kernels, caches) outside the timing
    peer()
    best = {"ours": [np.inf, np.inf], "peer": [np.inf, np.inf]}
    for _ in range(repeats):  # alternate, so both see the same machine load
        for side, fn in (("ours", ours), ("peer", peer)):
            wall, cpu, out = timed(fn)
            best[side] = [min(best[side][0], wall), min(best[side][1], cpu)]
            if side == "ours":
                o_xy, o_yx = out
            else:
                p_xy, p_yx = out
    delta = max(
        np.max(np.abs(o_xy.mean_skill - p_xy.mean_skill)),
        np.max(np.abs(o_yx.mean_skill - p_yx.mean_skill)),
    )
    return {
        "input": name,
        "n": int(x.size),
        "E": E,
        "lib_sizes": [int(v) for v in libs],
        "samples": samples,
        "ours_wall_s": best["ours"][0],
        "pyedm_wall_s": best["peer"][0],
        "ours_cpu_s": best["ours"][1],
        "pyedm_cpu_s": best["peer"][1],
        "speedup_wall": best["peer"][0] / best["ours"][0],
        "speedup_cpu": best["peer"][1] / best["ours"][1],
        "max_abs_delta_rho": float(delta),
        "ours_x:y": o_xy.mean_skill.round(4).tolist(),
        "pyedm_x:y": p_xy.mean_skill.round(4).tolist(),
        "ours_y:x": o_yx.mean_skill.round(4).tolist(),
        "pyedm_y:x": p_yx.mean_skill.round(4).tolist(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="one timing repeat (default 3)")
    parser.add_argument(
        "--threads", type=int, default=1, help="torch intra-op threads for ours (default 1)"
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    repeats = 1 if args.quick else 3
    system = coupled_logistic(1000, np.random.default_rng(0))
    x, y = system.column("x"), system.column("y")
    long = coupled_logistic(4000, np.random.default_rng(1))
    sa = load_sardine_anchovy()
    regimes = [
        ("logistic N=1000, small libraries", x, y, 2, [10, 25, 50, 100], 100),
        ("logistic N=1000 (brief's input)", x, y, 2, [100, 300, 500, 700, 900], 50),
        (
            "logistic N=4000, E=3",
            long.column("x"),
            long.column("y"),
            3,
            [400, 1200, 2000, 2800, 3600],
            20,
        ),
        (
            "sardine-anchovy (anchovy, sio_sst), E=3",
            sa.column("anchovy"),
            sa.column("sio_sst"),
            3,
            [20, 40, 60, len(sa) - 2],
            500,
        ),
    ]
    with quiet_dependencies():
        rows = [compare(*regime, repeats) for regime in regimes]
    head = (
        "| input | libraries × samples | ours wall (s) | pyEDM wall (s) | wall ratio "
        "(pyEDM / ours) | ours CPU (s) | pyEDM CPU (s) | CPU ratio | max abs Δρ |"
    )
    lines = [head, "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['input']} | {len(r['lib_sizes'])} × {r['samples']} | {r['ours_wall_s']:.3f} | "
            f"{r['pyedm_wall_s']:.3f} | {r['speedup_wall']:.2f}× | {r['ours_cpu_s']:.3f} | "
            f"{r['pyedm_cpu_s']:.3f} | {r['speedup_cpu']:.2f}× | {r['max_abs_delta_rho']:.4f} |"
        )
    table = "\n".join(lines)
    print(table)
    for r in rows:
        print(f"\n{r['input']}: ours x:y {r['ours_x:y']} | pyEDM x:y {r['pyedm_x:y']}")
        print(f"{' ' * len(r['input'])}  ours y:x {r['ours_y:x']} | pyEDM y:x {r['pyedm_y:x']}")
    out = Path("results/topodistill/bench")
    out.mkdir(parents=True, exist_ok=True)
    (out / "ccm_vs_pyedm.json").write_text(json.dumps(rows, indent=2))
    (out / "ccm_vs_pyedm.md").write_text(table + "\n")
    print(f"\nwritten to {out}/ccm_vs_pyedm.json and .md")


if __name__ == "__main__":  # pyEDM's worker processes need this guard
    main()
