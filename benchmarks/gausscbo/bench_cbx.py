"""Our jit+vmap Gaussian CBO vs the cbx package on the same anisotropic CBO problem.

Problem: KL to target A (sigma-point quadrature) as a function of the LBW coefficients
z ∈ R^5; N = 20 particles, α = 10⁴, λ = 1, σ = 5, Δt = 0.05, 200 steps, M runs, the
same initial particles for both. cbx evaluates the same (jitted JAX) objective on its
(M, N, D) array each step, so the comparison isolates the CBO loop. Reports wall time
after compilation (best of repeats; compile time apart), final-KL statistics and how our
time per step grows with M.

    python benchmarks/gausscbo/bench_cbx.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from icml26.gausscbo import GaussCBO, KLDivergence, consensus_point, paper_target
from icml26.gausscbo.precision import float64


def best_of(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return out, min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="M = 50 and fewer repeats")
    parser.add_argument("--out", default="results/gausscbo/bench")
    args = parser.parse_args()
    import cbx

    runs = 50 if args.quick else 100
    steps, n, repeats = 200, 20, (2 if args.quick else 3)
    kl = KLDivergence(paper_target("A"), d=2, pad_to=4)
    cbo = GaussCBO(kl, 2, n_particles=n, alpha=1e4, lam=1.0, sigma=5.0, dt=0.05)
    starts = np.random.default_rng(0).uniform(-5, 5, (runs, 2))
    eye = np.eye(2)

    # ours: first call compiles
    t0 = time.perf_counter()
    cbo.run(jax.random.key(0), starts, eye, steps)
    first = time.perf_counter() - t0
    ours, t_ours = best_of(lambda: cbo.run(jax.random.key(1), starts, eye, steps), repeats)
    compile_s = first - t_ours

    with float64():
        energies = jax.jit(lambda z: cbo.energies(z))
        x0 = np.stack([np.asarray(cbo.init(jax.random.key(10 + r), starts[r], eye))
                       for r in range(runs)])  # fmt: skip
        energies(jnp.asarray(x0)).block_until_ready()

        def run_cbx():
            dyn = cbx.dynamics.CBO(
                lambda x: np.asarray(energies(jnp.asarray(x))), f_dim="3D", x=x0.copy(),
                dt=0.05, sigma=5.0, alpha=1e4, lamda=1.0, noise="anisotropic",
                max_it=steps, verbosity=0, seed=0,
            )  # fmt: skip
            dyn.optimize()
            return dyn

        dyn, t_cbx = best_of(run_cbx, repeats)
        xf = jnp.asarray(dyn.x)
        bar = consensus_point(xf, energies(xf), 1e4)
        cbx_kl = np.asarray(jax.vmap(kl)(*cbo.space.gaussian(bar)))

    scaling = []
    for m in (25, 50, 100) if args.quick else (25, 50, 100, 200, 400):
        s = np.random.default_rng(1).uniform(-5, 5, (m, 2))
        cbo.run(jax.random.key(0), s, eye, steps)  # compile this batch size
        _, t = best_of(lambda s=s: cbo.run(jax.random.key(2), s, eye, steps), repeats)
        scaling.append({"runs": m, "seconds": t, "ms_per_step": 1e3 * t / steps})
    base = scaling[0]
    for row in scaling:
        row["time_ratio"] = row["seconds"] / base["seconds"]
        row["runs_ratio"] = row["runs"] / base["runs"]

    result = {
        "problem": {"target": "A", "runs": runs, "particles": n, "steps": steps, "D": 5},
        "ours_seconds": t_ours,
        "ours_compile_seconds": compile_s,
        "cbx_seconds": t_cbx,
        "speedup": t_cbx / t_ours,
        "ours_kl_median": float(np.median(ours.final_energy)),
        "cbx_kl_median": float(np.median(cbx_kl)),
        "ours_kl_iqr": float(np.subtract(*np.quantile(ours.final_energy, [0.75, 0.25]))),
        "cbx_kl_iqr": float(np.subtract(*np.quantile(cbx_kl, [0.75, 0.25]))),
        "scaling": scaling,
    }
    lines = [
        f"# Gaussian CBO vs cbx — target A, {runs} runs × {n} particles × {steps} steps",
        "",
        "| implementation | wall s (after compile) | median final KL | IQR |",
        "|---|---|---|---|",
        f"| icml26.gausscbo (jit+vmap) | {t_ours:.3f} | {result['ours_kl_median']:.4f} | "
        f"{result['ours_kl_iqr']:.2g} |",
        f"| cbx 1.x (numpy loop) | {t_cbx:.3f} | {result['cbx_kl_median']:.4f} | "
        f"{result['cbx_kl_iqr']:.2g} |",
        "",
        f"speed-up (cbx / ours): **{result['speedup']:.1f}×**; our compile time {compile_s:.1f} s",
        "",
        "| runs M | wall s | ms/step | time ratio | runs ratio |",
        "|---|---|---|---|---|",
        *(
            f"| {r['runs']} | {r['seconds']:.3f} | {r['ms_per_step']:.2f} | "
            f"{r['time_ratio']:.2f} | {r['runs_ratio']:.0f} |"
            for r in scaling
        ),
    ]
    table = "\n".join(lines)
    print(table)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "cbx.json").write_text(json.dumps(result, indent=2))
    (out / "cbx.md").write_text(table + "\n")


if __name__ == "__main__":
    main()
