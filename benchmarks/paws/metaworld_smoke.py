"""Smoke-scale offline run on locally generated Meta-World V3 data (extra ``metaworld``).

Per task and seed: behaviour episodes from the scripted experts (cached as ``.npz`` under
``--cache``; never regenerated when the file exists), oracle-labelled segment pairs on the
dense V3 reward, then BC, filtered BC, P-IQL-lite, PAWS and its per-step ablation on the
same pairs, and success % over ``--eval`` evaluation rollouts (± 2 SE over episodes):

    uv run python benchmarks/paws/metaworld_smoke.py --tasks button-press-topdown-v3 --seeds 0

``--normalize on`` z-scores the observations inside every learner (A_φ, the policies,
P-IQL-lite's value; statistics from the offline data each learner trains on, stored with
it and applied at evaluation); ``--normalize both`` runs every learner both ways, the
normalised rows marked "(z)". ``--methods`` restricts the learners, e.g. to BC, filtered
BC and PAWS on a harder task:

    uv run python benchmarks/paws/metaworld_smoke.py --tasks peg-insert-side-v3 \
        --seeds 0 --episodes 120 --horizon 200 --normalize both \
        --methods BC "filtered BC" PAWS

``--diagnose`` adds BC variants that separate the data from the learner: BC on the
expert episodes only, BC on z-scored observations (mean and sd of the behaviour steps),
and both; plus the data's statistics (success per behaviour kind, the expert's first
success step, the share of action coordinates clipped at ±1).

These are not the paper's data (see the package README).
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from icml26.paws import (
    AdvantageConfig,
    Episodes,
    PAWSConfig,
    PolicyConfig,
    behaviour_cloning,
    filtered_bc,
    fit_advantage,
    fit_paws,
    make_preferences,
    piql_lite,
)
from icml26.paws.metaworld_data import (
    METAWORLD_BEHAVIOURS,
    load_metaworld_episodes,
    metaworld_episodes,
    metaworld_success,
    save_metaworld_episodes,
)
from icml26.shared import numpy_rng, quiet_dependencies, torch_threads

METHODS = ("BC", "filtered BC", "P-IQL-lite", "PAWS", "PAWS per-step")


def one(task: str, seed: int, args) -> dict:
    cache = Path(args.cache) / f"{task}-seed{seed}-E{args.episodes}-H{args.horizon}.npz"
    t0 = time.process_time()
    if cache.is_file():
        data = load_metaworld_episodes(cache)
    else:
        data = metaworld_episodes(task, args.episodes, seed, horizon=args.horizon)
        save_metaworld_episodes(data, cache)
    gen_cpu = time.process_time() - t0
    eps = data.episodes
    pairs = make_preferences(eps, args.n, args.length, numpy_rng(seed, "prefs", args.n))
    fits: dict = {}
    out = {"task": task, "seed": seed, "behaviour_success": data.success_rate,
           "generate_cpu_s": gen_cpu}  # fmt: skip
    modes = {"off": (False,), "on": (True,), "both": (False, True)}[args.normalize]
    for norm in modes:
        tag = " (z)" if norm and len(modes) > 1 else ""
        pc = PolicyConfig(cap=args.policy_cap, normalize_obs=norm)
        adv = fit_advantage(pairs, AdvantageConfig(normalize_obs=norm), seed=seed, device="cpu")
        out[f"adv_val_accuracy{tag}"] = adv.val_accuracy
        base = PAWSConfig(policy=pc)
        for method in args.methods:
            if method == "BC":
                act = behaviour_cloning(eps, pc, seed=seed, device="cpu").policy.act
            elif method == "filtered BC":
                act = filtered_bc(pairs, pc, seed=seed, device="cpu").policy.act
            elif method == "P-IQL-lite":
                act = piql_lite(pairs, eps, policy_config=pc, reward_model=adv, seed=seed,
                                device="cpu")[0].policy.act  # fmt: skip
            else:
                weighting = "segment" if method == "PAWS" else "step"
                res = fit_paws(pairs, replace(base, weighting=weighting), advantage=adv,
                               seed=seed, device="cpu")  # fmt: skip
                act = res.act
                if method == "PAWS":
                    out[f"n_eff{tag}"] = res.temperature.n_eff
                    out[f"epsilon{tag}"] = res.temperature.epsilon
            fits[method + tag] = act
    if args.diagnose:
        diagnostics, extra = _diagnose(data, PolicyConfig(cap=args.policy_cap), seed)
        out.update(diagnostics)
        fits.update(extra)
    for name, act in fits.items():
        s, errors = metaworld_success(act, task, args.eval, seed, horizon=args.horizon)
        ok = s[np.isfinite(s)]
        out[name] = {"success": float(ok.mean()) if ok.size else float("nan"),
                     "two_se": float(2 * ok.std(ddof=1) / np.sqrt(ok.size)) if ok.size > 1
                     else float("nan"), "failed": len(errors)}  # fmt: skip
    out["cpu_s"] = time.process_time() - t0
    return out


def _zscore(eps: Episodes) -> tuple[Episodes, np.ndarray, np.ndarray]:
    flat = eps.obs.reshape(-1, eps.obs.shape[-1])
    mu, sd = flat.mean(axis=0), flat.std(axis=0)
    sd = np.where(sd > 1e-6, sd, 1.0)  # constant coordinates (e.g. the hidden goal) stay 0
    norm = Episodes(obs=((eps.obs - mu) / sd).astype(np.float32), act=eps.act,
                    reward=eps.reward, kind=eps.kind)  # fmt: skip
    return norm, mu, sd


def _diagnose(data, pc: PolicyConfig, seed: int) -> tuple[dict, dict]:
    """BC on expert episodes only and on z-scored observations (module docstring)."""
    eps = data.episodes
    expert = eps.kind == 0
    sub = Episodes(obs=eps.obs[expert], act=eps.act[expert], reward=eps.reward[expert],
                   kind=eps.kind[expert])  # fmt: skip
    first = [int(np.argmax(s)) for s in data.success[expert] if s.any()]
    stats = {
        "success_by_kind": {METAWORLD_BEHAVIOURS[k][0]: float(data.success[eps.kind == k]
                            .any(axis=1).mean()) for k in np.unique(eps.kind)},
        "expert_episodes": int(expert.sum()),
        "expert_first_success_step": float(np.median(first)) if first else float("nan"),
        "clipped_action_share": float(np.mean(np.abs(eps.act) >= 1.0)),
    }  # fmt: skip
    fits = {}
    for name, e in (("BC expert-only", sub), ("BC", eps)):
        if e.n_episodes == 0:
            continue
        if name == "BC expert-only":
            fits[name] = behaviour_cloning(e, pc, seed=seed, device="cpu").policy.act
        norm, mu, sd = _zscore(e)
        pol = behaviour_cloning(norm, pc, seed=seed, device="cpu").policy

        def act(o, pol=pol, mu=mu, sd=sd):
            return pol.act(((np.asarray(o) - mu) / sd).astype(np.float32))

        fits[f"{name} z-scored"] = act
    return stats, fits


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", nargs="+", default=["button-press-topdown-v3"])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0])
    ap.add_argument("--episodes", type=int, default=200)
    ap.add_argument("--horizon", type=int, default=150)
    ap.add_argument("--length", type=int, default=25)
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--eval", type=int, default=20)
    ap.add_argument("--policy-cap", type=int, default=2000)
    ap.add_argument("--diagnose", action="store_true")
    ap.add_argument("--normalize", choices=("off", "on", "both"), default="off")
    ap.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    ap.add_argument("--cache", default="results/paws/metaworld-cache")
    ap.add_argument("--json", default="results/paws/metaworld_smoke.json")
    args = ap.parse_args()
    results = []
    with torch_threads(1), quiet_dependencies():
        for task in args.tasks:
            for seed in args.seeds:
                results.append(one(task, seed, args))
                print(json.dumps(results[-1]), flush=True)
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(results, indent=1))
    methods = [m for m in results[0] if isinstance(results[0][m], dict) and "success" in
               results[0][m]]  # fmt: skip
    print("| task | seed | behaviour | " + " | ".join(methods) + " |")
    print("|---" * (3 + len(methods)) + "|")
    for r in results:
        cells = [f"{100 * r[m]['success']:.0f} ± {100 * r[m]['two_se']:.0f}" for m in methods]
        print(f"| {r['task']} | {r['seed']} | {100 * r['behaviour_success']:.0f} | "
              + " | ".join(cells) + " |")  # fmt: skip


if __name__ == "__main__":
    main()
