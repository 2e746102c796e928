"""The package's IQL against d3rlpy's IQL on the Meta-World `paper` preset's data and pairs.

Per (task, seed): the preset's cached behaviour episodes, its regret-labelled pairs and
its MLP A_φ (the same code and random streams as ``icml26 reproduce paws --preset paper``),
then P-IQL on A_φ's per-step rewards with the package's IQL under each ``--variants``
setting, and d3rlpy 2.8's IQL (its defaults, observations standardised, ``--d3rlpy-steps``
gradient steps) on the same rewards; success over the preset's evaluation rollouts.
Meant for development seeds (10, 11, ...):

    uv run python benchmarks/paws/iql_metaworld.py --seeds 10 11 --n 500 \\
        --variants 0.6.0 d3rlpy drop drop+256 drop+256+actor drop+actor

Variants (settings of ``IQLConfig``, each naming every knob): ``0.6.0`` the preset's
0.6.0 IQL (the time-limit step a terminal, 2 × 64 critics, the shared tanh-Gaussian
policy); ``drop`` the time-limit step left out, as d3rlpy does; ``256`` critics of
2 × 256 units (d3rlpy's and the paper's width); ``drop+256`` both; ``drop+actor`` and
``drop+256+actor`` with IQL's own actor (Gaussian around tanh μ, state-independent σ,
learning rate 3e-4) of the shared 2 × 64 size; ``actor256`` only IQL's actor of 2 × 256
units; ``drop+256+actor256`` every setting as d3rlpy (``D3RLPY_IQL``); ``preset`` the
installed preset's IQL as it is (since 0.7.0 ``drop+256+actor256``); ``d3rlpy`` d3rlpy's
IQL; ``d3rlpy-bc`` d3rlpy's IQL with β → 0 (uniform weights: behaviour cloning with
d3rlpy's actor, its critic unused). ``--methods`` adds PT+IQL and IPL on the same
variants (d3rlpy runs P-IQL only).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from itertools import product
from pathlib import Path

import numpy as np

from icml26.paws.baselines import ipl, piql, pt_iql
from icml26.paws.iql import D3RLPY_IQL
from icml26.paws.metaworld_data import metaworld_success
from icml26.paws.reproduce import PRESETS, normalised
from icml26.shared import quiet_dependencies, torch_threads

sys.path.insert(0, str(Path(__file__).parent))
from bench_d3rlpy_piql import d3rlpy_piql
from paper_cell import paper_cell

_OLD = {
    "last_step": "terminal",
    "hidden": (64, 64),
    "actor": "tanh-gaussian",
    "actor_lr": None,
    "actor_hidden": None,
}  # 0.6.0's IQL
VARIANTS = {  # every variant sets every knob (the preset's own IQL is "preset")
    "0.6.0": _OLD,
    "drop": {**_OLD, "last_step": "drop"},
    "256": {**_OLD, "hidden": (256, 256)},
    "drop+256": {**_OLD, "last_step": "drop", "hidden": (256, 256)},
    "drop+actor": {**_OLD, "last_step": "drop", "actor": "gaussian", "actor_lr": 3e-4},
    "drop+256+actor": {
        **_OLD,
        "last_step": "drop",
        "hidden": (256, 256),
        "actor": "gaussian",
        "actor_lr": 3e-4,
    },
    "actor256": {**_OLD, "actor": "gaussian", "actor_lr": 3e-4, "actor_hidden": (256, 256)},
    "drop+256+actor256": D3RLPY_IQL,
    "preset": {},
}


def one_variant(method, v, pairs, episodes, adv, config, seed, d3rlpy_steps):
    """Train ``method`` under variant ``v``; returns the acting function and its info
    (``None`` when the variant does not apply: d3rlpy runs P-IQL only)."""
    dev = config.device
    if v.startswith("d3rlpy"):
        if method != "P-IQL":
            return None
        reward = adv.model.per_step(episodes.obs, episodes.act)
        temp = 1e-9 if v == "d3rlpy-bc" else 3.0
        iql = d3rlpy_piql(episodes, reward, d3rlpy_steps, 256, seed, standardize=True,
                          weight_temp=temp)  # fmt: skip
        return (lambda o: iql.predict(o.astype(np.float32))), {}
    q = replace(config.iql, **VARIANTS[v])
    if method == "P-IQL":
        fit, info = piql(pairs, episodes, q, config.policy, reward_model=adv, seed=seed,
                         device=dev)  # fmt: skip
    elif method == "PT+IQL":
        fit, info = pt_iql(pairs, episodes, q, config.policy, advantage_config=config.advantage,
                           seed=seed, device=dev)  # fmt: skip
    else:
        fit, info = ipl(pairs, episodes, replace(config.ipl, iql=q), config.policy, seed=seed,
                        device=dev)  # fmt: skip
    return fit.policy.act, {**info, "policy_steps": fit.plateau["steps"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", nargs="+", default=["push-back-v3", "peg-insert-side-v3"])
    ap.add_argument("--seeds", nargs="+", type=int, default=[10, 11])
    ap.add_argument("--n", nargs="+", type=int, default=[500])
    ap.add_argument("--variants", nargs="+", default=["0.6.0", "preset", "d3rlpy"],
                    choices=[*VARIANTS, "d3rlpy", "d3rlpy-bc"])  # fmt: skip
    ap.add_argument("--methods", nargs="+", default=["P-IQL"],
                    choices=["P-IQL", "PT+IQL", "IPL"])  # fmt: skip
    ap.add_argument("--d3rlpy-steps", type=int, default=3000,
                    help="d3rlpy's gradient steps (the package's critic cap is 3 000)")  # fmt: skip
    ap.add_argument("--json", default="results/paws/iql_metaworld.jsonl")
    args = ap.parse_args()
    config = normalised(PRESETS["paper"])
    mw = config.metaworld
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    with torch_threads(1), quiet_dependencies():
        for task, seed, n in product(args.tasks, args.seeds, args.n):
            episodes, pairs, adv = paper_cell(config, task, seed, n)
            for method, v in product(args.methods, args.variants):
                c0 = time.process_time()
                got = one_variant(method, v, pairs, episodes, adv, config, seed,
                                  args.d3rlpy_steps)  # fmt: skip
                if got is None:
                    continue
                act, info = got
                train_cpu = time.process_time() - c0
                s, _ = metaworld_success(act, task, mw.eval_episodes, seed, horizon=mw.horizon)
                row = {"task": task, "seed": seed, "n": n, "method": method, "variant": v,
                       "success": float(np.nanmean(s)), "adv_val_accuracy": adv.val_accuracy,
                       "critic_steps": info.get("critic_plateau", {}).get("steps"),
                       "clipped_share": info.get("clipped_share"),
                       "policy_steps": info.get("policy_steps"),
                       "train_cpu_s": round(train_cpu, 1),
                       "cpu_s": round(time.process_time() - c0, 1)}  # fmt: skip
                print(json.dumps(row), flush=True)
                with out.open("a") as f:
                    f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
