"""PAWS against d3rlpy's IQL on relabelled rewards (P-IQL), side by side in one run.

Both learners start from the same cached point-mass data and the same learnt A_φ (the
per-step MLP outputs are P-IQL's Markovian reward; PAWS uses the segment sums). Measured:
wall-clock and CPU time of the policy stage at equal gradient steps and batch size, and the
normalised return. A few untimed warm-up steps of both learners come first (``--warmup``),
so that d3rlpy's one-time set-up is not charged to the first cell. Run with one torch
thread on a shared machine, so read the ratios, not the absolute seconds:

    uv run python benchmarks/paws/bench_d3rlpy_piql.py --steps 2000 --n 50 500 --length 20

``--metaworld FILE`` runs the same cells on cached Meta-World episodes (the ``.npz`` that
``metaworld_smoke.py`` writes; extra ``metaworld`` for the evaluation rollouts), with the
observations z-scored inside both learners (PAWS's ``normalize_obs``, d3rlpy's
``StandardObservationScaler``) and success over ``--eval`` rollouts as the score.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from icml26.paws import (
    AdvantageConfig,
    PAWSConfig,
    PointMass,
    PointMassConfig,
    PolicyConfig,
    behaviour_episodes,
    evaluate_policy,
    fit_advantage,
    fit_paws,
    make_preferences,
    normalised_return,
    reference_returns,
)
from icml26.shared import import_quietly, numpy_rng, quiet_dependencies


def _timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def _import_d3rlpy():
    """d3rlpy without gym's import banner and its per-epoch structlog INFO lines."""
    return import_quietly("d3rlpy")


def d3rlpy_piql(
    episodes,
    reward,
    steps: int,
    batch: int,
    seed: int,
    *,
    standardize=False,
    weight_temp: float = 3.0,
):
    d3rlpy = _import_d3rlpy()

    e, h = reward.shape
    terminals = np.zeros((e, h), np.float32)
    timeouts = np.zeros((e, h), np.float32)
    timeouts[:, -1] = 1.0
    dataset = d3rlpy.dataset.MDPDataset(
        observations=episodes.obs.reshape(e * h, -1),
        actions=episodes.act.reshape(e * h, -1),
        rewards=reward.reshape(-1).astype(np.float32),
        terminals=terminals.reshape(-1),
        timeouts=timeouts.reshape(-1),
    )
    d3rlpy.seed(seed)
    # standardize: d3rlpy's own z-score of the observations (as PAWS's normalize_obs)
    scaler = d3rlpy.preprocessing.StandardObservationScaler() if standardize else None
    iql = d3rlpy.algos.IQLConfig(batch_size=batch, observation_scaler=scaler,
                                 weight_temp=weight_temp).create(device="cpu:0")  # fmt: skip
    iql.fit(
        dataset, n_steps=steps, n_steps_per_epoch=steps, show_progress=False,
        logger_adapter=d3rlpy.logging.NoopAdapterFactory(), save_interval=10**9,
    )  # fmt: skip
    return iql


def compare(env, episodes, starts, refs, n: int, length: int, args, score=None) -> dict:
    """One (N, n) cell: PAWS and d3rlpy P-IQL on the same data and the same A_φ.
    ``score`` (Meta-World: success rate) replaces the point mass's normalised return."""
    pairs = make_preferences(episodes, n, length, numpy_rng(args.seed, "prefs", n))
    norm = score is not None  # Meta-World: observations z-scored inside every learner
    adv = fit_advantage(pairs, AdvantageConfig(normalize_obs=norm), seed=args.seed,
                        device="cpu")  # fmt: skip
    # equal gradient steps: a cap that no plateau can cut short (window > steps)
    pc = PolicyConfig(batch_size=args.batch, cap=args.steps, plateau_window=args.steps + 1,
                      normalize_obs=norm)  # fmt: skip
    paws, pw, pcpu = _timed(
        lambda: fit_paws(pairs, PAWSConfig(policy=pc), advantage=adv, seed=args.seed, device="cpu")
    )
    reward = adv.model.per_step(episodes.obs, episodes.act)
    iql, iw, icpu = _timed(
        lambda: d3rlpy_piql(episodes, reward, args.steps, args.batch, args.seed, standardize=norm)
    )

    if score is None:

        def score(act) -> float:
            return normalised_return(evaluate_policy(act, env, starts).mean, *refs)

    return {
        "N": length, "n": n, "steps": args.steps,
        "paws_wall_s": pw, "piql_wall_s": iw, "wall_ratio": pw / iw,
        "paws_cpu_s": pcpu, "piql_cpu_s": icpu, "cpu_ratio": pcpu / icpu,
        "paws_return": score(paws.act),
        "piql_return": score(lambda o: iql.predict(o.astype(np.float32))),
    }  # fmt: skip


def _metaworld(args) -> list[dict]:
    """Every (N, n) cell on cached Meta-World episodes; success over ``--eval`` rollouts."""
    from icml26.paws.metaworld_data import load_metaworld_episodes, metaworld_success

    data = load_metaworld_episodes(args.metaworld)
    horizon = data.episodes.horizon

    def score(act) -> float:
        s, _ = metaworld_success(act, data.task, args.eval, args.seed, horizon=horizon)
        return float(np.nanmean(s))

    rows = []
    for length in args.length:
        for n in args.n:
            row = {"task": data.task, **compare(None, data.episodes, None, None, n, length,
                                                  args, score=score)}  # fmt: skip
            rows.append(row)
            print(json.dumps({k: round(v, 3) if isinstance(v, float) else v
                              for k, v in row.items()}))  # fmt: skip
    return rows


def _warm_up(args) -> None:
    """A few untimed steps of both learners on a tiny data set (results discarded)."""
    env = PointMass(PointMassConfig())
    episodes = behaviour_episodes(env, 10, numpy_rng(args.seed, "warm-up"))
    pairs = make_preferences(episodes, 20, env.config.period, numpy_rng(args.seed, "warm-up"))
    pc = PolicyConfig(batch_size=args.batch, cap=args.warmup, plateau_window=args.warmup + 1)
    adv = fit_advantage(pairs, seed=args.seed, device="cpu")
    fit_paws(pairs, PAWSConfig(policy=pc), advantage=adv, seed=args.seed, device="cpu")
    reward = adv.model.per_step(episodes.obs, episodes.act)
    d3rlpy_piql(episodes, reward, args.warmup, args.batch, args.seed)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--n", type=int, nargs="+", default=[50, 500])
    ap.add_argument("--length", type=int, nargs="+", default=[20])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=Path("results/paws/bench"))
    ap.add_argument(
        "--metaworld",
        type=Path,
        default=None,
        help="a cached Meta-World episodes .npz (metaworld_smoke.py's cache): "
        "benchmark on it instead of the point mass; score = success rate",
    )
    ap.add_argument("--eval", type=int, default=20, help="Meta-World evaluation rollouts")
    ap.add_argument("--warmup", type=int, default=20,
                    help="untimed d3rlpy and PAWS steps first, so that one-time set-up "
                    "(imports, first-call kernels) is charged to no cell; 0: none")  # fmt: skip
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    rows = []
    with quiet_dependencies():
        if args.warmup > 0:
            _warm_up(args)
        if args.metaworld is not None:
            rows = _metaworld(args)
        for length in [] if args.metaworld is not None else args.length:
            env = PointMass(PointMassConfig(period=length, horizon=max(100, 5 * length)))
            episodes = behaviour_episodes(env, 200, numpy_rng(args.seed, "behaviour"))
            starts = env.starts(50, numpy_rng(args.seed, "eval"))
            refs = reference_returns(env, starts, args.seed)
            for n in args.n:
                row = compare(env, episodes, starts, refs, n, length, args)
                rows.append(row)
                print(json.dumps({k: round(v, 3) if isinstance(v, float) else v
                                  for k, v in row.items()}))  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "bench_d3rlpy_piql.json").write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
