"""Our jit+vmap Gaussian CBO vs the cbx package on the same anisotropic CBO problem.

Problem: KL to target A (sigma-point quadrature) as a function of the LBW coefficients
z ∈ R^5; N = 20 particles, α = 10⁴, λ = 1, σ = 5, Δt = 0.05, 200 steps, M runs, the
same initial particles for both (``GaussCBO.run(particles=x0)`` and cbx's ``x=x0``).
cbx runs twice: with the objective written in numpy
(vectorised over its (M, N, D) array — how a cbx user writes it; checked equal to ours
on the initial particles) and with our jitted JAX objective (isolating the CBO loop).
Reports wall and process-CPU time after compilation (best of repeats; compile time
apart), final-KL statistics and how our time per step grows with M.

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
    """(output, best wall seconds, process CPU seconds of that repeat)."""
    best = (np.inf, np.inf)
    for _ in range(repeats):
        c0, t0 = time.process_time(), time.perf_counter()
        out = fn()
        best = min(best, (time.perf_counter() - t0, time.process_time() - c0))
    return out, *best


def numpy_kl(target, kappa: float = 1.0):
    """KL(N(m, (I+T)²) ‖ target) with the κ = 1 sigma points, in numpy, for d = 2 and
    coefficients z = (m1, m2, T11, T22, √2 T12) (reference Σ⁰ = I)."""
    log_norm = np.asarray(target.density().log_norm)
    means = np.asarray(target.means)
    prec = np.asarray(target.density().prec_chol)

    def log_p(x):  # x (..., 2)
        y = np.einsum("kij,...kj->...ki", prec, x[..., None, :] - means)
        a = log_norm - 0.5 * np.sum(y**2, -1)
        mx = a.max(-1, keepdims=True)
        return (mx[..., 0] + np.log(np.exp(a - mx).sum(-1))) - np.log(2 * np.pi)

    def energy(z):
        m = z[..., :2]
        t12 = z[..., 4] / np.sqrt(2.0)
        a11, a22, a12 = 1 + z[..., 2], 1 + z[..., 3], t12
        s11, s22, s12 = a11**2 + a12**2, a22**2 + a12**2, a12 * (a11 + a22)
        l11 = np.sqrt(np.maximum(s11, 0))
        l21 = s12 / np.where(l11 > 0, l11, 1)
        l22sq = s22 - l21**2
        scale = np.maximum(1.0, np.maximum(s11, s22))
        ok = (np.minimum(s11, l22sq) > 1e-10 * scale) & (l11 > 0)
        l22 = np.sqrt(np.where(ok, l22sq, 1.0))
        c = np.sqrt(2 + kappa)
        col1 = np.stack([l11, l21], -1) * c
        col2 = np.stack([np.zeros_like(l22), l22], -1) * c
        pts = np.stack([m, m + col1, m + col2, m - col1, m - col2], -2)
        w = np.array([kappa, 0.5, 0.5, 0.5, 0.5]) / (2 + kappa)
        ev = -(log_p(pts) @ w)
        logdet = 2 * (np.log(np.where(ok, l11, 1)) + np.log(l22))
        kl = ev - 0.5 * (logdet + 2 * (1 + np.log(2 * np.pi)))
        return np.where(ok & np.isfinite(kl), kl, 1e4)

    return energy


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

    with float64():
        energies = jax.jit(lambda z: cbo.energies(z))
        # the same initial particles for both implementations
        x0 = np.stack([np.asarray(cbo.init(jax.random.key(10 + r), starts[r], eye))
                       for r in range(runs)])  # fmt: skip
        energies(jnp.asarray(x0)).block_until_ready()

    def ours_run(seed):
        return cbo.run(jax.random.key(seed), starts, eye, steps, particles=x0)

    # ours: the first call compiles
    c0, t0 = time.process_time(), time.perf_counter()
    ours_run(0)
    first, first_cpu = time.perf_counter() - t0, time.process_time() - c0
    ours, t_ours, c_ours = best_of(lambda: ours_run(1), repeats)
    compile_s, compile_cpu = first - t_ours, first_cpu - c_ours

    with float64():
        np_energy = numpy_kl(paper_target("A"))
        np.testing.assert_allclose(
            np_energy(x0), np.asarray(energies(jnp.asarray(x0))), rtol=1e-8, atol=1e-10
        )

        def run_cbx(f):
            dyn = cbx.dynamics.CBO(
                f, f_dim="3D", x=x0.copy(), dt=0.05, sigma=5.0, alpha=1e4, lamda=1.0,
                noise="anisotropic", max_it=steps, verbosity=0, seed=0,
            )  # fmt: skip
            dyn.optimize()
            return dyn

        dyn, t_cbx, c_cbx = best_of(lambda: run_cbx(np_energy), repeats)
        _, t_cbxj, c_cbxj = best_of(
            lambda: run_cbx(lambda x: np.asarray(energies(jnp.asarray(x)))), repeats
        )
        xf = jnp.asarray(dyn.x)
        bar = consensus_point(xf, energies(xf), 1e4)
        cbx_kl = np.asarray(jax.vmap(kl)(*cbo.space.gaussian(bar)))

    scaling = []
    for m in (25, 50, 100) if args.quick else (25, 50, 100, 200, 400):
        s = np.random.default_rng(1).uniform(-5, 5, (m, 2))
        cbo.run(jax.random.key(0), s, eye, steps)  # compile this batch size
        _, t, _ = best_of(lambda s=s: cbo.run(jax.random.key(2), s, eye, steps), repeats)
        scaling.append({"runs": m, "seconds": t, "ms_per_step": 1e3 * t / steps})
    base = scaling[0]
    for row in scaling:
        row["time_ratio"] = row["seconds"] / base["seconds"]
        row["runs_ratio"] = row["runs"] / base["runs"]

    result = {
        "problem": {"target": "A", "runs": runs, "particles": n, "steps": steps, "D": 5},
        "ours_seconds": t_ours,
        "ours_compile_seconds": compile_s,
        "ours_compile_cpu_seconds": compile_cpu,
        "ours_cpu_seconds": c_ours,
        "cbx_seconds": t_cbx,
        "cbx_cpu_seconds": c_cbx,
        "cbx_jax_objective_seconds": t_cbxj,
        "cbx_jax_objective_cpu_seconds": c_cbxj,
        "speedup": t_cbx / t_ours,
        "speedup_cpu": c_cbx / c_ours,
        "speedup_vs_cbx_jax_objective": t_cbxj / t_ours,
        "speedup_cpu_vs_cbx_jax_objective": c_cbxj / c_ours,
        "ours_kl_median": float(np.median(ours.final_energy)),
        "cbx_kl_median": float(np.median(cbx_kl)),
        "ours_kl_iqr": float(np.subtract(*np.quantile(ours.final_energy, [0.75, 0.25]))),
        "cbx_kl_iqr": float(np.subtract(*np.quantile(cbx_kl, [0.75, 0.25]))),
        "scaling": scaling,
    }
    lines = [
        f"# Gaussian CBO vs cbx — target A, {runs} runs × {n} particles × {steps} steps",
        "",
        "| implementation | wall s | CPU s | wall ratio vs ours | median final KL | IQR |",
        "|---|---|---|---|---|---|",
        f"| icml26.gausscbo (jit+vmap) | {t_ours:.3f} | {c_ours:.3f} | 1.0 | "
        f"{result['ours_kl_median']:.4f} | {result['ours_kl_iqr']:.2g} |",
        f"| cbx, numpy objective | {t_cbx:.3f} | {c_cbx:.3f} | {t_cbx / t_ours:.1f} | "
        f"{result['cbx_kl_median']:.4f} | {result['cbx_kl_iqr']:.2g} |",
        f"| cbx, our jitted objective | {t_cbxj:.3f} | {c_cbxj:.3f} | {t_cbxj / t_ours:.1f} | | |",
        "",
        f"speed-up vs cbx (numpy objective): **{result['speedup']:.1f}×** wall, "
        f"**{result['speedup_cpu']:.1f}×** CPU; vs cbx calling our jitted objective: "
        f"{result['speedup_vs_cbx_jax_objective']:.1f}× wall, "
        f"{result['speedup_cpu_vs_cbx_jax_objective']:.1f}× CPU; our compile time "
        f"{compile_s:.1f} s wall, {compile_cpu:.1f} s CPU (apart from the timings)",
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
