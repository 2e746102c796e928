"""Does the `paper` preset's IQL critic converge at CPU scale? One long critic run on the
preset's data (P-IQL: A_φ's per-step outputs as the reward), no plateau stop, with per
window (100 steps) the plateau rule's quantities (``fit_iql(trace=)``: normalised TD loss,
TD loss, Var(TD target), V's expectile loss) and V on a fixed probe batch of training
observations: its mean, its sd and its relative change since the previous window,
‖V_w − V_{w−1}‖ / ‖V_{w−1}‖.

The target network's timescale is 1 / (τ (1 − γ)) gradient steps (0.005, 0.99: 20 000):
a Polyak rate τ moves the target by τ a step, and a value that bootstraps over a horizon
of 1 / (1 − γ) environment steps needs that many target moves to propagate.

    uv run python benchmarks/paws/iql_converge_metaworld.py --task push-back-v3 --seed 10 \\
        --steps 60000
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from icml26.paws.iql import fit_iql, iql_transitions
from icml26.paws.reproduce import PRESETS, normalised
from icml26.shared import quiet_dependencies, torch_threads

sys.path.insert(0, str(Path(__file__).parent))
from paper_cell import paper_rewards

WINDOW = 100


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", default="push-back-v3")
    ap.add_argument("--seed", type=int, default=10)
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--steps", type=int, default=60000)
    ap.add_argument("--probe", type=int, default=2048, help="probe observations")
    ap.add_argument("--out", default="results/paws/iql_converge")
    args = ap.parse_args()
    config = normalised(PRESETS["paper"])
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with torch_threads(1), quiet_dependencies():
        episodes, _adv, reward, _ = paper_rewards(config, args.task, args.seed, args.n)
        q = replace(config.iql, cap=args.steps, plateau_patience=10**9)  # no plateau stop
        data = iql_transitions(episodes, reward, q)
        pick = np.random.default_rng(12345).choice(data.obs.shape[0], args.probe, replace=False)
        probe = torch.as_tensor(data.obs[pick])
        rows: list[dict] = []
        prev: list[torch.Tensor] = []

        def on_step(step: int, critic) -> None:
            if step % WINDOW:
                return
            with torch.no_grad():
                v = critic.value(probe).double()
            change = float("nan")
            if prev:
                change = float((v - prev[0]).norm() / (prev[0].norm() + 1e-12))
                prev[0] = v
            else:
                prev.append(v)
            rows.append({"step": step, "v_mean": float(v.mean()), "v_sd": float(v.std()),
                         "v_abs_mean": float(v.abs().mean()), "v_rel_change": change})  # fmt: skip

        trace: list = []
        c0 = time.process_time()
        fit_iql(data, q, seed=args.seed, device=config.device, on_step=on_step, trace=trace)
        cpu = time.process_time() - c0
        tr = np.asarray(trace, dtype=np.float64)
        k = tr.shape[0] // WINDOW
        win = tr[: k * WINDOW].reshape(k, WINDOW, -1).mean(axis=1)
        for r, w in zip(rows, win, strict=False):
            r.update(normalised_td=w[0], td=w[1], target_var=w[2], v_loss=w[3])
        summary = {"task": args.task, "seed": args.seed, "n": args.n, "steps": args.steps,
                   "cpu_s": round(cpu, 1), "timescale_steps": 1 / (q.polyak * (1 - q.discount)),
                   "iql": {k: str(v) for k, v in vars(q).items()}, "windows": rows}  # fmt: skip
        name = f"converge-{args.task}-seed{args.seed}-n{args.n}.json"
        (out / name).write_text(json.dumps(summary))
        for r in rows:
            if r["step"] in (1000, 3000, 5000, 10000, 20000, 30000, 40000, 50000, 60000):
                print(json.dumps(r), flush=True)
        print(json.dumps({"cpu_s": round(cpu, 1)}), flush=True)


if __name__ == "__main__":
    main()
