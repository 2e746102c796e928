"""MS-PCA against the PCA tools a user would otherwise pick, on the same input.

Wall and CPU time (median of repeats; JAX compile time apart) and alignment with the
clean sample's top PC, at the paper's d = 900, n = 1000 with a 10% mean shift:

    MS-PCA, official code (two randomized SVDs)    MS-PCA, Algorithm 1 (block Krylov)
    MS-PCA, Algorithm 1 with exact Gram eigh       scikit-learn PCA(n_components=10)
    rpca.RobustPCA (RPCA-AAP)                      pyriemann Tyler M-estimator

Two settings, each in its own process so that the thread settings hold for every
library: ``one core`` (pinned to CPU 0 like ``taskset -c 0``, with
OMP/MKL/OPENBLAS_NUM_THREADS=1 and XLA's CPU thread pools at one thread) and ``all
cores``. Prints a table with the ratios ours/peer and writes
results/mspca/bench/bench_mspca.{json,md}.

Usage: python benchmarks/mspca/bench_mspca.py [--quick] [--repeats R] [--setting one|all]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ONE_CORE_ENV = {
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
}


def measure(quick: bool, repeats: int) -> dict:
    import jax
    import jax.numpy as jnp
    import numpy as np
    from sklearn.decomposition import PCA

    from icml26.mspca import (
        BASELINES,
        alignment,
        knockoff_pca,
        paper_shift_norm,
        paper_spike,
        simulate,
        top_eigenpairs,
    )
    from icml26.shared import quiet_dependencies

    d, n = (450, 500) if quick else (900, 1000)
    c, frac = d / n, 0.10
    s = simulate(jax.random.key(0), d, n, jnp.array([paper_spike(c)]),
                 jnp.array([paper_shift_norm(c, frac)]), jnp.array([frac]))  # fmt: skip
    ref = np.asarray(top_eigenpairs(s.x_clean, 1, method="gram")[1][:, 0])
    x = np.asarray(s.x_tilde)
    xj = jnp.asarray(x)
    key = jax.random.key(1)

    def timed(fn, r):
        out = jax.block_until_ready(fn())  # warm-up (and JAX compilation)
        walls, cpus = [], []
        for _ in range(r):
            t0, c0 = time.perf_counter(), time.process_time()
            out = jax.block_until_ready(fn())
            walls.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
        return float(np.median(walls)), float(np.median(cpus)), out

    ours = {
        "MS-PCA, official code": {"variant": "official_sv"},
        "MS-PCA, Algorithm 1 (block Krylov)": {"variant": "eigenvalue"},
        "MS-PCA, Algorithm 1 (exact Gram eigh)": {"variant": "eigenvalue", "method": "gram"},
    }
    results = {}
    with quiet_dependencies():
        for name, options in ours.items():
            t0 = time.perf_counter()
            jax.block_until_ready(knockoff_pca(xj, key, **options))
            compile_s = time.perf_counter() - t0
            wall, cpu, res = timed(lambda o=options: knockoff_pca(xj, key, **o), repeats)
            align = float(alignment(res.principal_component, ref))
            results[name] = {"wall_s": wall, "cpu_s": cpu, "compile_s": compile_s,
                             "alignment": align}  # fmt: skip
        wall, cpu, pca = timed(lambda: PCA(n_components=10, random_state=0).fit(x.T), repeats)
        results["scikit-learn PCA(10)"] = {
            "wall_s": wall,
            "cpu_s": cpu,
            "alignment": float(abs(pca.components_[0] @ ref)),
        }
        slow = max(1, repeats // 3)
        for name, label in (
            ("RPCA-AAP", "rpca RobustPCA (RPCA-AAP)"),
            ("Tyler", "pyriemann Tyler"),
        ):
            wall, cpu, u = timed(lambda name=name: BASELINES[name].fit(x), slow)
            results[label] = {"wall_s": wall, "cpu_s": cpu, "alignment": float(abs(u @ ref))}
    return {"d": d, "n": n, "fraction": frac, "repeats": repeats, "methods": results}


def table(setting: str, data: dict) -> str:
    res = data["methods"]
    lines = [
        f"### {setting}: d = {data['d']}, n = {data['n']}, π = {data['fraction']:.0%}, "
        f"median of {data['repeats']} runs (a third of that for the robust peers)",
        "",
        "| method | wall (ms) | CPU (ms) | official / method (wall) | "
        "Algorithm 1 / method (wall) | alignment |",
        "|---|---|---|---|---|---|",
    ]
    off = res["MS-PCA, official code"]["wall_s"]
    alg = res["MS-PCA, Algorithm 1 (block Krylov)"]["wall_s"]
    for name, r in res.items():
        lines.append(
            f"| {name} | {r['wall_s'] * 1e3:.1f} | {r['cpu_s'] * 1e3:.1f} | "
            f"{off / r['wall_s']:.2f} | {alg / r['wall_s']:.2f} | {r['alignment']:.3f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="d = 450, n = 500")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--setting", choices=("one", "all", "both"), default="both")
    parser.add_argument("--out", default="results/mspca/bench")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    repeats = args.repeats or (3 if args.quick else 7)
    if args.child:  # one measurement in this process, as JSON on stdout
        if args.setting == "one":
            os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
        print(json.dumps(measure(args.quick, repeats)))
        return
    settings = ("one", "all") if args.setting == "both" else (args.setting,)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    report, texts = {}, []
    for setting in settings:
        env = os.environ | (ONE_CORE_ENV if setting == "one" else {})
        cmd = [sys.executable, __file__, "--child", "--setting", setting, "--repeats",
               str(repeats)] + (["--quick"] if args.quick else [])  # fmt: skip
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
        data = json.loads(proc.stdout.strip().splitlines()[-1])
        label = "one core, one thread per library" if setting == "one" else "all cores"
        report[setting] = data
        texts.append(table(label, data))
    text = "\n\n".join(texts)
    print(text)
    (out / "bench_mspca.md").write_text(text + "\n")
    (out / "bench_mspca.json").write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
