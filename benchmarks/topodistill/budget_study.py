"""Budget study: cross-map skill against the students' training steps (one seed).

The smoke protocol (Rössler → Lorenz, noise 0.3·sd, x2 cross-mapped from the learned
manifold of y1 at the largest library, on the evaluation block) on a development seed
that is not an evaluation seed. The students are trained with the plateau rule switched
off up to ``--cap`` steps; every ``plateau_window`` steps the skill of both directions
is measured, and the KL history is replayed through the plateau rule to mark where the
default rule stops. Plain CCM on the same rows is the reference line.

    python benchmarks/topodistill/budget_study.py [--seed 100] [--cap 4000] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from icml26.shared import numpy_rng, quiet_dependencies, torch_threads
from icml26.topodistill import DistillConfig, TopoDistill, build_manifolds, cross_map
from icml26.topodistill.ccm import library_sizes
from icml26.topodistill.reproduce import PRESETS
from icml26.topodistill.stopping import Plateau
from icml26.topodistill.systems import add_observation_noise, rossler_lorenz


def skill(points: np.ndarray, target: np.ndarray, times: np.ndarray, theiler: int, seed: int):
    sizes = library_sizes(target.size)
    rho = cross_map(
        points,
        target,
        sizes[-1:],
        samples=1,
        exclusion_radius=theiler,
        times=times,
        rng=np.random.default_rng(seed),
        device="cpu",
    )
    return float(np.nanmean(rho[0, :, 0]))


def study(coupling: float, seed: int, cap: int, base: DistillConfig) -> dict:
    smoke = PRESETS["smoke"]
    system = rossler_lorenz(smoke.n, numpy_rng(seed, "system", f"{coupling}"), coupling=coupling)
    data = add_observation_noise(system.data, 0.3, numpy_rng(seed, "noise", "0.3"))
    cause, effect = system.names.index(smoke.cause), system.names.index(smoke.effect)
    pair = [cause, effect]
    # τ, E, Theiler window and rows exactly as the reproduction chooses them
    probe = build_manifolds(data, method="ccm", variables=pair, max_E=smoke.max_E, device="cpu")
    taus, dims = [1] * data.shape[1], [1] * data.shape[1]
    for v, e, t in zip(pair, probe.E, probe.tau, strict=True):
        taus[v], dims[v] = t, e
    cfg = replace(base, student_steps=cap, patience=10**9, theiler=probe.theiler)
    cut = round(data.shape[0] * smoke.train_fraction)
    start = cut + probe.theiler + (cfg.student_window - 1) * max(taus[v] for v in pair)
    ccm = build_manifolds(
        data,
        method="ccm",
        variables=pair,
        E=dims,
        tau=taus,
        theiler=probe.theiler,
        first_time=start,
        device="cpu",
    )
    rows = ccm.times
    block0 = cut + probe.theiler
    fwd_t, rev_t = data[rows, cause], data[rows, effect]
    curve = []
    t0 = time.process_time()

    def measure(step: int, model: TopoDistill) -> None:
        z = {v: model.embed(data[block0:, v], v) for v in pair}
        m = {v: pts[np.isin(t + block0, rows)] for v, (pts, t) in z.items()}
        kl = model.history[f"student{effect}_kl"][-cfg.plateau_window :]
        curve.append(
            {
                "step": step,
                "kl_y1": float(np.mean(kl)),
                "skill": skill(m[effect], fwd_t, rows, probe.theiler, seed),
                "skill_reverse": skill(m[cause], rev_t, rows, probe.theiler, seed),
            }
        )

    model = TopoDistill(cfg, seed=seed, device="cpu")
    model.fit(data[:cut], lags=taus, dims=dims, variables=pair, callback=measure)
    cpu = time.process_time() - t0
    # where the default plateau rule (and two stricter/looser ones) would have stopped
    stops = {}
    for name, (patience, delta) in {
        "default": (base.patience, base.min_delta),
        "patience 3, 1 %": (3, 0.01),
        "patience 5, 0.5 %": (5, 0.005),
    }.items():
        stop = {}
        for v in pair:
            rule = Plateau(base.plateau_window, patience, delta, cap)
            for value in model.history[f"student{v}_kl"]:
                if rule.update(value):
                    break
            stop[system.names[v]] = rule.steps
        stops[name] = stop
    return {
        "coupling": coupling,
        "seed": seed,
        "E": dims[effect],
        "tau": taus[effect],
        "ccm_skill": skill(ccm.points[1], fwd_t, rows, probe.theiler, seed),
        "ccm_skill_reverse": skill(ccm.points[0], rev_t, rows, probe.theiler, seed),
        "curve": curve,
        "stops": stops,
        "teacher": model.stopping["teacher"],
        "cpu_seconds": cpu,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=100)
    parser.add_argument("--cap", type=int, default=4000)
    parser.add_argument("--couplings", type=float, nargs="+", default=[1.0, 2.0])
    parser.add_argument("--out", type=Path, default=Path("results/topodistill/budget"))
    args = parser.parse_args()
    base = PRESETS["smoke"].distill
    results = []
    with quiet_dependencies(), torch_threads(1):
        for c in args.couplings:
            results.append(study(c, args.seed, args.cap, base))
            r = results[-1]
            print(
                f"\nC = {c:g} (seed {args.seed}, E = {r['E']}, τ = {r['tau']}), "
                f"{r['cpu_seconds']:.0f} CPU-s; teacher {r['teacher']}"
            )
            print(f"plain CCM: skill {r['ccm_skill']:.3f}, reverse {r['ccm_skill_reverse']:.3f}")
            print(f"stops: {r['stops']}")
            print("| steps | KL (y1) | skill x2 from M_y1 | reverse |")
            print("|---|---|---|---|")
            for p in r["curve"]:
                if (
                    p["step"] in (100, 200, 500, 1000, 1500, 2000, 3000, 4000)
                    or p is r["curve"][-1]
                ):
                    print(
                        f"| {p['step']} | {p['kl_y1']:.3f} | {p['skill']:.3f} | "
                        f"{p['skill_reverse']:.3f} |"
                    )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "budget.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
