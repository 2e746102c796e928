"""Side by side, warmed, one torch thread: per-cell inference of DITING vs CPMLP vs the
Severson pipeline (D = 180 and 900, batch 1 and 64); the batched Sinkhorn vs POT's
``ot.sinkhorn2`` (cost difference and time on the same K × K problems); the simulator's time
per cell (PyBaMM SPMe is not installed in the workspace: that ratio is left open).

    uv run python benchmarks/diting/bench_diting.py --out results/diting/bench
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

for _name in ("JAX", "TENSORFLOW", "CUPY"):
    os.environ.setdefault(f"POT_BACKEND_DISABLE_{_name}", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from icml26.diting import (  # noqa: E402
    CPMLP,
    Diting,
    DitingConfig,
    SeversonModel,
    ground_cost,
    simulate_fleet,
    sinkhorn_log,
    spectral_measures,
    window_mask,
)
from icml26.shared import quiet_dependencies  # noqa: E402


def _time(fn, repeat: int) -> float:
    fn()  # warm
    t0 = time.process_time()
    for _ in range(repeat):
        fn()
    return (time.process_time() - t0) / repeat


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--bins", type=int, nargs="+", default=[32], help="451 = every bin of D = 900")
    p.add_argument("--out", default="results/diting/bench")
    args = p.parse_args()
    torch.set_num_threads(1)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    res: dict = {"inference_cpu_s_per_cell": {}, "sinkhorn": {}, "simulator": {}}
    with quiet_dependencies(), torch.no_grad():
        for S in (60, 300):
            fleet = simulate_fleet(64, np.random.default_rng(0), charge_discharge_length=S)
            sev = SeversonModel("full").fit(
                fleet.curves, np.full(64, 100), fleet.life, np.arange(64)
            )
            torch.manual_seed(0)
            diting = Diting(DitingConfig(charge_discharge_length=S)).eval()
            cpmlp = CPMLP(100, 3, S).eval()
            for B in (1, 64):
                x = torch.as_tensor(fleet.curves[:B])
                m = torch.as_tensor(window_mask(np.full(B, 100), 100))
                row = {
                    "DITING": _time(lambda x=x, m=m, f=diting: f(x, m), args.repeat) / B,
                    "CPMLP": _time(lambda x=x, m=m, f=cpmlp: f(x, m), args.repeat) / B,
                    "Severson": _time(
                        lambda B=B, f=sev, c=fleet.curves: f.predict(c[:B], np.full(B, 100)),
                        args.repeat,
                    )
                    / B,
                }
                row["DITING / CPMLP"] = row["DITING"] / row["CPMLP"]
                row["DITING / Severson"] = row["DITING"] / row["Severson"]
                res["inference_cpu_s_per_cell"][f"D={3 * S}, batch={B}"] = row
                print(f"D={3 * S} B={B}", {k: f"{v:.3g}" for k, v in row.items()}, flush=True)
        import ot

        for F in args.bins:
            g = torch.Generator().manual_seed(0)
            mu = spectral_measures(torch.randn(8, 900, generator=g, dtype=torch.float64), F)
            M = ground_cost(mu.shape[-1], dtype=torch.float64)
            a = mu.unsqueeze(1).expand(8, 8, -1)
            b = mu.unsqueeze(0).expand(8, 8, -1)
            ours = sinkhorn_log(a, b, M, reg=0.05, max_iter=1000, tol=1e-9)
            an, bn, Mn = mu.numpy(), mu.numpy(), M.numpy()

            def pot(an=an, bn=bn, Mn=Mn):
                return np.array(
                    [[ot.sinkhorn2(x, y, Mn, 0.05, method="sinkhorn_log", stopThr=1e-9,
                                   numItermax=1000) for y in bn] for x in an]
                )  # fmt: skip

            ref = pot()
            t_ours = _time(lambda a=a, b=b, M=M: sinkhorn_log(a, b, M, reg=0.05, max_iter=1000,
                                                              tol=1e-9), args.repeat)  # fmt: skip
            t_pot = _time(pot, 1)
            row = {
                "max_abs_diff": float(np.abs(ours.cost.numpy() - ref).max()),
                "ours_cpu_s": t_ours,
                "pot_cpu_s": t_pot,
                "ours / POT time": t_ours / t_pot,
            }
            res["sinkhorn"][f"64 problems, {mu.shape[-1]} bins"] = row
            print("sinkhorn", mu.shape[-1], {k: f"{v:.3g}" for k, v in row.items()}, flush=True)
        for S in (60, 300):
            t = _time(
                lambda S=S: simulate_fleet(20, np.random.default_rng(1), charge_discharge_length=S),
                args.repeat,
            )
            res["simulator"][f"S={S}"] = {"cpu_s_per_cell": t / 20}
            print("simulator", S, t / 20, flush=True)
    res["pybamm"] = "not installed in the workspace; the simulator-vs-SPMe ratio is left open"
    (out / "bench.json").write_text(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
