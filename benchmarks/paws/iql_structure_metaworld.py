"""P-IQL on the Meta-World `paper` preset: the package's IQL with each of d3rlpy's
remaining structural choices (``IQLConfig`` options, 0.9.0) and with all of them, beside
d3rlpy 2.8's IQL, at the preset's critic budget on the same learnt rewards.

Per (task, seed): the preset's cached behaviour episodes, its regret-labelled pairs and its
MLP A_φ (``paper_cell``), A_φ's per-step outputs as the reward. Variants (on top of the
preset's IQL, ``D3RLPY_IQL``):

- ``preset``: the preset as it stands (critic, then extraction to the actor's plateau);
- ``joint-critic``: one Adam step on L_V + Σ_k L_Q,k (``critic_update="joint"``);
- ``joint-actor``: the actor trained with the critic, one step per critic step
  (``actor_update="joint"``);
- ``uniform-actor``: extraction afterwards on uniform minibatches with the weight in the
  loss (``actor_sampling="uniform"``);
- ``obs-eps``: observations z-scored by std + 1e-3 (``obs_eps``, d3rlpy's scaler);
- ``all``: the four together (``D3RLPY_IQL_STRUCTURE``);
- ``d3rlpy``: d3rlpy's IQL (its defaults, observations standardised) for ``--d3rlpy-steps``.

Success over ``--eval-episodes`` rollouts (the first 20 are the preset's 20; both are
written). ``--train-seed-offset k`` trains every learner from seed + k on the same data,
pairs, A_φ and rollouts (another random stream for the same cell). Meant for development seeds:

    uv run python benchmarks/paws/iql_structure_metaworld.py --seeds 10 11 --eval-episodes 50
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

from icml26.paws.iql import D3RLPY_IQL_STRUCTURE, iql_policy
from icml26.paws.metaworld_data import metaworld_success
from icml26.paws.reproduce import PRESETS, normalised
from icml26.shared import quiet_dependencies, torch_threads

sys.path.insert(0, str(Path(__file__).parent))
from iql_steps_metaworld import d3rlpy_iql
from paper_cell import paper_rewards

VARIANTS = {
    "preset": {},
    "joint-critic": {"critic_update": "joint"},
    "joint-actor": {"actor_update": "joint"},
    "uniform-actor": {"actor_sampling": "uniform"},
    "obs-eps": {"obs_eps": D3RLPY_IQL_STRUCTURE["obs_eps"]},
    "all": dict(D3RLPY_IQL_STRUCTURE),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", nargs="+", default=["push-back-v3", "peg-insert-side-v3"])
    ap.add_argument("--seeds", nargs="+", type=int, default=[10, 11])
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--variants", nargs="+", default=[*VARIANTS, "d3rlpy"],
                    choices=[*VARIANTS, "d3rlpy"])  # fmt: skip
    ap.add_argument("--d3rlpy-steps", type=int, default=3000)
    ap.add_argument("--eval-episodes", type=int, default=50)
    ap.add_argument("--train-seed-offset", type=int, default=0,
                    help="the learners' seed: cell seed + this")  # fmt: skip
    ap.add_argument("--out", default="results/paws/iql_structure")
    args = ap.parse_args()
    config = normalised(PRESETS["paper"])
    mw = config.metaworld
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with torch_threads(1), quiet_dependencies():
        for task, seed in product(args.tasks, args.seeds):
            episodes, adv, reward, setup = paper_rewards(config, task, seed, args.n)
            per_episode: dict = {}

            def score(act, task=task, seed=seed, per_episode=per_episode) -> float:
                s, _ = metaworld_success(act, task, args.eval_episodes, seed,
                                         horizon=mw.horizon)  # fmt: skip
                per_episode["s"] = s.tolist()
                return float(np.nanmean(s))

            for name in args.variants:
                c0 = time.process_time()
                train_seed = seed + args.train_seed_offset
                row = {"task": task, "seed": seed, "n": args.n, "variant": name,
                       "train_seed": train_seed, "setup_cpu_s": setup,
                       "adv_val_accuracy": adv.val_accuracy}  # fmt: skip
                if name == "d3rlpy":
                    d3rlpy_iql(episodes, reward, [args.d3rlpy_steps], train_seed, score)
                    row["critic_steps"] = args.d3rlpy_steps
                else:
                    q = replace(config.iql, **VARIANTS[name])
                    pol, info = iql_policy(episodes, reward, q, config.policy, seed=train_seed,
                                           device=config.device)  # fmt: skip
                    score(pol.policy.act)
                    row.update(critic_steps=info["critic_plateau"]["steps"],
                               critic_stop=info["critic_plateau"]["reason"],
                               actor_steps=pol.plateau["steps"],
                               clipped_share=info["clipped_share"])  # fmt: skip
                s = np.asarray(per_episode["s"], dtype=float)
                row.update(success=float(np.nanmean(s)), success_first20=float(np.nanmean(s[:20])),
                           eval_episodes=int(s.size), per_episode=s.tolist(),
                           cpu_s=round(time.process_time() - c0, 1))  # fmt: skip
                print(json.dumps({k: v for k, v in row.items() if k != "per_episode"}), flush=True)
                with (out / "rows.jsonl").open("a") as f:
                    f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
