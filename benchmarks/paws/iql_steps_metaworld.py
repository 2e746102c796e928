"""P-IQL on the Meta-World `paper` preset against the critic's gradient-step budget: the
package's IQL (the preset's settings and plateau rule) and d3rlpy's IQL at the same step
counts, on the same learnt rewards.

Per (task, seed): the preset's cached behaviour episodes, its regret-labelled pairs and its
MLP A_φ (the same code and random streams as ``icml26 reproduce paws --preset paper`` and
``iql_metaworld.py``), A_φ's per-step outputs as the reward of both learners.

- ``own``: one critic run with the preset's IQL and plateau rule (windows of 100 steps,
  patience 5, min_delta 1%) and the cap raised to the largest ``--caps``. Under a fixed
  seed a run with cap c is the first c steps of this run, so at each cap on the grid the
  policy is extracted from the critic as it stands (the preset's extraction: IQL's actor,
  its own plateau rule) and scored; a cap past the plateau's stop gives the stop's policy.
  ``--rule off`` trains the critic to the largest cap with no plateau stop (fixed step
  counts, as d3rlpy). ``--actor-caps`` extracts under each actor cap (the preset's: 2 000,
  with the actor's own plateau rule). The per-window losses are written: the normalised TD
  loss the rule watches, the TD loss, the TD targets' variance and V's expectile loss; and
  the actor's loss curve per extraction.
- ``d3rlpy``: d3rlpy 2.8's IQL (its defaults, observations standardised), one run to the
  largest ``--d3rlpy-caps`` in epochs of 100 steps; at each cap the actor as it stands is
  scored (the global random states are saved and restored around the rollouts, so the run
  goes on as an uninterrupted one). Its per-epoch Q, V and actor losses are written.

Success over the preset's 20 evaluation rollouts. Meant for development seeds:

    uv run python benchmarks/paws/iql_steps_metaworld.py --seeds 10 11 \\
        --caps 3000 10000 30000 --d3rlpy-caps 3000 10000
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
import torch

from icml26.paws.iql import actor_config, advantage_weights, fit_iql, iql_transitions
from icml26.paws.metaworld_data import metaworld_success
from icml26.paws.policy import fit_weighted_mle
from icml26.paws.reproduce import PRESETS, normalised
from icml26.shared import quiet_dependencies, torch_threads

sys.path.insert(0, str(Path(__file__).parent))
from bench_d3rlpy_piql import _import_d3rlpy
from paper_cell import paper_rewards

WINDOW = 100
D3RLPY_LOSSES = ("q_loss", "v_loss", "actor_loss")  # d3rlpy's per-epoch mean losses


def window_means(values: np.ndarray, window: int = WINDOW) -> list:
    """Means over consecutive windows (the plateau rule's windows); a short tail dropped."""
    v = np.asarray(values, dtype=np.float64)
    k = v.shape[0] // window
    return v[: k * window].reshape(k, window, *v.shape[1:]).mean(axis=1).tolist()


def own_iql(episodes, reward, config, caps, actor_caps, rule, seed, score):
    """The preset's IQL with the cap at max(caps) (``rule="off"``: no plateau stop); at
    each cap (and at the stop) the actor extracted under each actor cap and scored."""
    q = replace(config.iql, cap=max(caps))
    if rule == "off":  # a fixed step count: the plateau never fires
        q = replace(q, plateau_patience=10**9)
    data = iql_transitions(episodes, reward, q)
    pc = actor_config(q, config.policy)
    dev = config.device
    scores: dict[int, dict] = {}

    def extract(step, critic):
        w = advantage_weights(critic, data.obs, data.act, q)
        scores[step] = {}
        for ac in actor_caps:
            c0 = time.process_time()
            pol = fit_weighted_mle(data.obs, data.act, w, replace(pc, cap=ac), seed=seed,
                                   device=dev)  # fmt: skip
            success = score(pol.policy.act)
            scores[step][ac] = {"success": success, "actor_steps": pol.plateau["steps"],
                                "actor_stop": pol.plateau["reason"],
                                "actor_loss": window_means(pol.losses),
                                "clipped_share": float(np.mean(w >= q.max_weight)),
                                "extract_cpu_s": round(time.process_time() - c0, 1)}  # fmt: skip

    def on_step(step, critic):
        if step in caps:
            extract(step, critic)

    trace: list = []
    c0 = time.process_time()
    critic, summary = fit_iql(data, q, seed=seed, device=dev, on_step=on_step, trace=trace)
    if summary["steps"] not in scores:
        extract(summary["steps"], critic)
    cpu = time.process_time() - c0
    curve = window_means(np.array(trace))  # (normalised TD, TD, target variance, V loss)
    return scores, summary, curve, cpu


def d3rlpy_iql(episodes, reward, caps, seed, score):
    """d3rlpy's IQL to max(caps) in epochs of WINDOW steps, scored at each cap."""
    d3rlpy = _import_d3rlpy()
    e, h = reward.shape
    timeouts = np.zeros((e, h), np.float32)
    timeouts[:, -1] = 1.0
    dataset = d3rlpy.dataset.MDPDataset(
        observations=episodes.obs.reshape(e * h, -1), actions=episodes.act.reshape(e * h, -1),
        rewards=reward.reshape(-1).astype(np.float32), terminals=np.zeros(e * h, np.float32),
        timeouts=timeouts.reshape(-1),
    )  # fmt: skip
    d3rlpy.seed(seed)
    iql = d3rlpy.algos.IQLConfig(
        batch_size=256, observation_scaler=d3rlpy.preprocessing.StandardObservationScaler()
    ).create(device="cpu:0")
    scores: dict[int, dict] = {}
    curve = []
    c0 = time.process_time()
    for _epoch, metrics in iql.fitter(
        dataset, n_steps=max(caps), n_steps_per_epoch=WINDOW, show_progress=False,
        logger_adapter=d3rlpy.logging.NoopAdapterFactory(), save_interval=10**9,
    ):  # fmt: skip
        curve.append([metrics.get(k, float("nan"))
                      for k in D3RLPY_LOSSES])  # fmt: skip
        step = len(curve) * WINDOW
        if step in caps:
            # d3rlpy draws its minibatches from numpy's legacy global generator
            np_state = np.random.get_state()  # noqa: NPY002
            torch_state = torch.get_rng_state()
            t0 = time.process_time()
            scores[step] = {"success": score(lambda o: iql.predict(o.astype(np.float32)))}
            scores[step]["eval_cpu_s"] = round(time.process_time() - t0, 1)
            np.random.set_state(np_state)  # noqa: NPY002
            torch.set_rng_state(torch_state)
    return scores, curve, time.process_time() - c0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", nargs="+", default=["push-back-v3", "peg-insert-side-v3"])
    ap.add_argument("--seeds", nargs="+", type=int, default=[10, 11])
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--caps", nargs="+", type=int, default=[3000, 10000, 30000])
    ap.add_argument("--actor-caps", nargs="+", type=int, default=[2000],
                    help="the extraction policy's caps (the preset's: 2 000)")  # fmt: skip
    ap.add_argument(
        "--rule",
        choices=["on", "off"],
        default="on",
        help="own IQL: the preset's plateau rule, or none (fixed step counts)",
    )
    ap.add_argument("--d3rlpy-caps", nargs="+", type=int, default=[3000, 10000])
    ap.add_argument("--learners", nargs="+", default=["own", "d3rlpy"], choices=["own", "d3rlpy"])
    ap.add_argument("--out", default="results/paws/iql_steps")
    args = ap.parse_args()
    config = normalised(PRESETS["paper"])
    mw = config.metaworld
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with torch_threads(1), quiet_dependencies():
        for task, seed in product(args.tasks, args.seeds):
            episodes, adv, reward, setup = paper_rewards(config, task, seed, args.n)

            def score(act, task=task, seed=seed) -> float:
                s, _ = metaworld_success(act, task, mw.eval_episodes, seed, horizon=mw.horizon)
                return float(np.nanmean(s))

            cell = {"task": task, "seed": seed, "n": args.n, "setup_cpu_s": setup,
                    "adv_val_accuracy": adv.val_accuracy}  # fmt: skip
            if "own" in args.learners:
                scores, summary, curve, cpu = own_iql(episodes, reward, config, args.caps,
                                                      args.actor_caps, args.rule, seed,
                                                      score)  # fmt: skip
                row = {**cell, "learner": f"own (rule {args.rule})", "stop": summary,
                       "cpu_s": round(cpu, 1),
                       "scores": {k: {a: {kk: vv for kk, vv in r.items() if kk != "actor_loss"}
                                      for a, r in v.items()}
                                  for k, v in scores.items()}}  # fmt: skip
                print(json.dumps(row), flush=True)
                with (out / "rows.jsonl").open("a") as f:
                    f.write(json.dumps(row) + "\n")
                name = f"curve-own-rule-{args.rule}-{task}-seed{seed}.json"
                (out / name).write_text(json.dumps(
                    {"columns": ["normalised_td", "td", "target_var", "v_loss"], "window": WINDOW,
                     "curve": curve, "stop": summary,
                     "actor_loss": {f"{k}/{a}": r["actor_loss"] for k, v in scores.items()
                                    for a, r in v.items()}}))  # fmt: skip
            if "d3rlpy" in args.learners:
                scores, curve, cpu = d3rlpy_iql(episodes, reward, args.d3rlpy_caps, seed, score)
                row = {**cell, "learner": "d3rlpy", "cpu_s": round(cpu, 1), "scores": scores}
                print(json.dumps(row), flush=True)
                with (out / "rows.jsonl").open("a") as f:
                    f.write(json.dumps(row) + "\n")
                (out / f"curve-d3rlpy-{task}-seed{seed}.json").write_text(json.dumps(
                    {"columns": list(D3RLPY_LOSSES), "window": WINDOW,
                     "curve": curve}))  # fmt: skip


if __name__ == "__main__":
    main()
