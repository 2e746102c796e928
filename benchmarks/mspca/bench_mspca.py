"""MS-PCA against the PCA tools a user would otherwise pick, on the same input.

Wall time (median of repeats; JAX compile time reported apart) and alignment with the
clean sample's top PC, at the paper's d = 900, n = 1000 with a 10% mean shift:

    MS-PCA (ours, two top-10 eigensolves: randomized subspace, or exact Gram eigh)
    scikit-learn PCA(n_components=10)
    rpca.RobustPCA (RPCA-AAP)                pyriemann Tyler M-estimator

Prints a table with the ratios ours/peer and writes results/mspca/bench/bench_mspca.{json,md}.
Usage: python benchmarks/mspca/bench_mspca.py [--quick] [--repeats R]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

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


def timed(fn, repeats: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = jax.block_until_ready(fn())
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="d = 450, n = 500, fewer repeats")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--out", default="results/mspca/bench")
    args = parser.parse_args()
    d, n = (450, 500) if args.quick else (900, 1000)
    repeats = args.repeats or (3 if args.quick else 7)
    c, frac = d / n, 0.10

    s = simulate(jax.random.key(0), d, n, jnp.array([paper_spike(c)]),
                 jnp.array([paper_shift_norm(c, frac)]), jnp.array([frac]))  # fmt: skip
    ref = np.asarray(top_eigenpairs(s.x_clean, 1, method="gram")[1][:, 0])
    x = np.asarray(s.x_tilde)
    xj = jnp.asarray(x)
    key = jax.random.key(1)

    t0 = time.perf_counter()
    jax.block_until_ready(knockoff_pca(xj, key))
    compile_s = time.perf_counter() - t0
    jax.block_until_ready(knockoff_pca(xj, key, method="gram"))

    results = {}
    t, res = timed(lambda: knockoff_pca(xj, key), repeats)
    results["MS-PCA (ours)"] = (t, float(alignment(res.principal_component, ref)))
    t, res = timed(lambda: knockoff_pca(xj, key, method="gram"), repeats)
    results["MS-PCA (ours, exact Gram eigh)"] = (t, float(alignment(res.principal_component, ref)))
    t, pca = timed(lambda: PCA(n_components=10, random_state=0).fit(x.T), repeats)
    results["sklearn PCA(10)"] = (t, float(abs(pca.components_[0] @ ref)))
    slow_repeats = max(1, repeats // 3)
    for name in ("RPCA-AAP", "Tyler"):
        t, u = timed(lambda name=name: BASELINES[name].fit(x), slow_repeats)
        results[f"{name} ({'rpca' if name == 'RPCA-AAP' else 'pyriemann'})"] = (
            t,
            float(abs(u @ ref)),
        )

    ours = results["MS-PCA (ours)"][0]
    lines = [
        f"# MS-PCA benchmark: d = {d}, n = {n}, π = {frac:.0%}, median of {repeats} runs "
        f"({slow_repeats} for the robust peers); MS-PCA compile {compile_s:.2f} s (not counted)",
        "",
        "| method | wall time (ms) | ours / peer time | alignment |",
        "|---|---|---|---|",
    ]
    for name, (t, a) in results.items():
        lines.append(f"| {name} | {t * 1e3:.1f} | {ours / t:.2f} | {a:.3f} |")
    text = "\n".join(lines)
    print(text)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_mspca.md").write_text(text + "\n")
    (out / "bench_mspca.json").write_text(json.dumps({
        "d": d, "n": n, "fraction": frac, "repeats": repeats, "compile_s": compile_s,
        "methods": {k: {"seconds": t, "alignment": a, "ours_over_peer": ours / t}
                    for k, (t, a) in results.items()},
    }, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
