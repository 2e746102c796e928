"""Smoke-scale offline run on locally generated Meta-World V3 data (extra ``metaworld``).

Per task and seed: behaviour episodes from the scripted experts (cached as ``.npz`` under
``--cache``; never regenerated when the file exists), oracle-labelled segment pairs on the
dense V3 reward, then BC, filtered BC, P-IQL-lite, CPL, PAWS and its per-step ablation
(and, with ``--methods``, P-IQL on the package's IQL) on the same pairs, at every
preference count of ``--n``, and success % over ``--eval`` evaluation rollouts (± 2 SE
over episodes; with several seeds, also the mean over seeds ± 2 SE over seeds):

    uv run python benchmarks/paws/metaworld_smoke.py --tasks button-press-topdown-v3 --seeds 0

``--normalize on`` z-scores the observations inside every learner (A_φ, the policies,
P-IQL-lite's value; statistics from the offline data each learner trains on, stored with
it and applied at evaluation); ``--normalize both`` runs every learner both ways, the
normalised rows marked "(z)". ``--methods`` restricts the learners, e.g. to BC, filtered
BC and PAWS on a harder task:

    uv run python benchmarks/paws/metaworld_smoke.py --tasks peg-insert-side-v3 \
        --seeds 0 --episodes 120 --horizon 200 --normalize both \
        --methods BC "filtered BC" PAWS

``--paws-neff 0.1 0.5 1.0 --paws-segments pairs pairs+unlabelled`` adds PAWS rows at
other n_eff targets and weighted sets (for development seeds, never the evaluation
seeds 0–2); ``--teacher time-baselined`` labels the same pairs by return minus the
behaviour data's mean return at the same start step. ``--diagnose`` adds BC variants that
separate the data from the learner: BC on the expert episodes only, BC on z-scored
observations (mean and sd of the behaviour steps), and both; plus the data's statistics
(success per behaviour kind, the expert's first success step, the share of action
coordinates clipped at ±1).

The `paper` preset's content at CPU scale (one hard task, n = 50 and 500, normalised
observations, three seeds):

    uv run python benchmarks/paws/metaworld_smoke.py --tasks push-back-v3 --seeds 0 1 2 \
        --episodes 120 --horizon 200 --n 50 500 --normalize on

``--methods "PAWS (Transformer)"`` adds PAWS with the encoder-only Transformer A_φ (the
MLP A_φ's training, early stopping and n_eff rule; its own held-out accuracy reported).
``--methods CPL+KL`` adds CPL+KL (BC pre-training, the BC row's fit, then CPL with the
KL term); ``--paws-lambda 0.03 0.1 0.3 1 3 10`` adds the fixed-λ ablation at the largest n
(the `paper` preset's grid). ``--generate-only`` generates and caches the behaviour
episodes and trains nothing, so that no timed run pays for the data:

    uv run python benchmarks/paws/metaworld_smoke.py --generate-only \
        --tasks peg-insert-side-v3 push-back-v3 --seeds 0 1 2 --episodes 120 --horizon 200

The registry's `paper` preset (``uv run icml26 reproduce paws --preset paper --seeds 5``)
runs the same per-(task, seed) pipeline through the package (``icml26.paws.metaworld_run``,
the same cache files) with every method; this script keeps the diagnostics and variants.

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
    CPLConfig,
    Episodes,
    PAWSConfig,
    PolicyConfig,
    behaviour_cloning,
    cpl,
    cut_segments,
    filtered_bc,
    fit_advantage,
    fit_paws,
    make_preferences,
    oracle_labels,
    piql,
    piql_lite,
    weighted_segments,
)
from icml26.paws.iql import IQLConfig
from icml26.paws.metaworld_data import METAWORLD_BEHAVIOURS, metaworld_success
from icml26.paws.metaworld_run import MetaWorldConfig, cached_episodes
from icml26.paws.teacher import fit_oracle_critic
from icml26.shared import numpy_rng, quiet_dependencies, torch_threads

METHODS = (
    "BC",
    "filtered BC",
    "P-IQL-lite",
    "P-IQL",
    "CPL",
    "PAWS",
    "PAWS per-step",
    "PAWS (Transformer)",
    "CPL+KL",
)
DEFAULT_METHODS = ("BC", "filtered BC", "P-IQL-lite", "CPL", "PAWS", "PAWS per-step")


def _episodes(task: str, seed: int, args):
    """The cached behaviour episodes of (task, seed), generated and cached when missing
    (the package's cache, shared with the `paper` preset)."""
    mw = MetaWorldConfig(tasks=(task,), episodes=args.episodes, horizon=args.horizon,
                         length=args.length, cache=args.cache)  # fmt: skip
    return cached_episodes(task, seed, mw)


def one(task: str, seed: int, args) -> dict:
    t0 = time.process_time()
    data = _episodes(task, seed, args)
    gen_cpu = time.process_time() - t0
    eps = data.episodes
    fits: dict = {}
    cpu: dict = {}
    out = {"task": task, "seed": seed, "behaviour_success": data.success_rate,
           "generate_cpu_s": gen_cpu}  # fmt: skip
    modes = {"off": (False,), "on": (True,), "both": (False, True)}[args.normalize]
    bc: dict = {}  # BC depends on neither n nor the pairs: trained once per mode
    bc_fit: dict = {}  # the same BC fit, CPL+KL's pre-training
    for n in args.n:
        if args.teacher == "regret":  # the oracle critic: teacher side only
            if "critic" not in out:
                t1 = time.process_time()
                critic = fit_oracle_critic(eps, seed=seed, device="cpu")
                cpu["oracle critic"] = time.process_time() - t1
                out["critic"] = {"r2": critic.r2, "steps": critic.steps,
                                 "stopped_by": critic.stopped_by}  # fmt: skip
            pairs = make_preferences(eps, n, args.length, numpy_rng(seed, "prefs", n),
                                     teacher="regret", critic=critic)  # fmt: skip
        else:
            pairs = make_preferences(eps, n, args.length, numpy_rng(seed, "prefs", n))
        if args.teacher == "time-baselined":
            pairs = _time_baselined(pairs, eps)
        ntag = f" n={n}" if len(args.n) > 1 else ""
        for norm in modes:
            tag = (" (z)" if norm and len(modes) > 1 else "") + ntag
            pc = PolicyConfig(cap=args.policy_cap, normalize_obs=norm)
            t1 = time.process_time()
            adv = fit_advantage(pairs, AdvantageConfig(normalize_obs=norm), seed=seed,
                                device="cpu")  # fmt: skip
            cpu[f"A_phi{tag}"] = time.process_time() - t1
            out[f"adv_val_accuracy{tag}"] = adv.val_accuracy
            # where the data sit in the episode: mean start step of every pair segment and
            # of the preferred ones (filtered BC's data); PAWS rows add their weighted mean
            side = (pairs.label < 0.5).astype(int)
            keep = pairs.label != 0.5
            out[f"mean_start{ntag}"] = float(pairs.start.mean())
            out[f"preferred_start{ntag}"] = float(
                pairs.start[np.flatnonzero(keep), side[keep]].mean()
            )
            base = PAWSConfig(policy=pc)
            for method in args.methods:
                t1 = time.process_time()
                if method in ("BC", "CPL+KL") and norm not in bc_fit:
                    bc_fit[norm] = behaviour_cloning(eps, pc, seed=seed, device="cpu")
                    bc[norm] = bc_fit[norm].policy.act
                if method == "BC":
                    act = bc[norm]
                elif method == "CPL+KL":  # BC pre-training (the BC row's fit), then CPL + KL
                    act = cpl(pairs, CPLConfig(kl=True), pc, episodes=eps, seed=seed,
                              device="cpu", pretrained=bc_fit[norm]).policy.act  # fmt: skip
                elif method == "filtered BC":
                    act = filtered_bc(pairs, pc, seed=seed, device="cpu").policy.act
                elif method == "P-IQL-lite":
                    act = piql_lite(pairs, eps, policy_config=pc, reward_model=adv, seed=seed,
                                    device="cpu")[0].policy.act  # fmt: skip
                elif method == "P-IQL":  # the package's IQL on A_φ's per-step rewards
                    icfg = IQLConfig(normalize_obs=norm, return_range=args.iql_return_range)
                    fit, info = piql(pairs, eps, icfg, pc, reward_model=adv, seed=seed,
                                     device="cpu")  # fmt: skip
                    act = fit.policy.act
                    out[f"critic_steps{tag}"] = info["critic_plateau"]["steps"]
                    out[f"clipped_share{tag}"] = info["clipped_share"]
                elif method == "PAWS (Transformer)":  # the encoder-only Transformer A_φ
                    tadv = fit_advantage(pairs, AdvantageConfig(kind="transformer",
                                         normalize_obs=norm), seed=seed, device="cpu")  # fmt: skip
                    res = fit_paws(pairs, base, advantage=tadv, seed=seed, device="cpu")
                    act = res.act
                    out[f"transformer_adv_val_accuracy{tag}"] = tadv.val_accuracy
                    out[f"transformer_adv_epochs{tag}"] = tadv.epochs
                    out[f"transformer_adv_stopped_by{tag}"] = tadv.stopped_by
                    out[f"n_eff (Transformer){tag}"] = res.temperature.n_eff
                    out[f"epsilon (Transformer){tag}"] = res.temperature.epsilon
                    out[f"weighted_start (Transformer){tag}"] = _weighted_start(
                        res, pairs, eps, "pairs"
                    )
                elif method == "CPL":
                    act = cpl(pairs, CPLConfig(), pc, episodes=eps, seed=seed,
                              device="cpu").policy.act  # fmt: skip
                else:
                    weighting = "segment" if method == "PAWS" else "step"
                    res = fit_paws(pairs, replace(base, weighting=weighting), advantage=adv,
                                   seed=seed, device="cpu")  # fmt: skip
                    act = res.act
                    if method == "PAWS":
                        out[f"n_eff{tag}"] = res.temperature.n_eff
                        out[f"lambda{tag}"] = res.temperature.lam
                        out[f"epsilon{tag}"] = res.temperature.epsilon
                        out[f"weighted_start{tag}"] = _weighted_start(res, pairs, eps, "pairs")
                cpu[method + tag] = time.process_time() - t1
                fits[method + tag] = act
            for lam in args.paws_lambda if n == max(args.n) else ():  # fixed-λ ablation
                name = f"PAWS λ={lam:g}{tag}"
                t1 = time.process_time()
                res = fit_paws(pairs, replace(base, fixed_lambda=lam), advantage=adv, seed=seed,
                               device="cpu")  # fmt: skip
                out[f"n_eff {name}"] = res.temperature.n_eff
                out[f"weighted_start {name}"] = _weighted_start(res, pairs, eps, "pairs")
                cpu[name] = time.process_time() - t1
                fits[name] = res.act
            for frac in args.paws_neff:  # PAWS variants (development seeds only)
                for segs in args.paws_segments:
                    if (frac, segs) == (0.1, "pairs") and "PAWS" in args.methods:
                        continue  # that is the PAWS row
                    name = f"PAWS n_eff {100 * frac:g}% {segs}{tag}"
                    t1 = time.process_time()
                    res = fit_paws(pairs, replace(base, neff_fraction=frac, segments=segs),
                                   episodes=eps, advantage=adv, seed=seed,
                                   device="cpu")  # fmt: skip
                    out[f"n_eff {name}"] = res.temperature.n_eff
                    out[f"weighted_start {name}"] = _weighted_start(res, pairs, eps, segs)
                    cpu[name] = time.process_time() - t1
                    fits[name] = res.act
    if args.diagnose:
        diagnostics, extra = _diagnose(data, PolicyConfig(cap=args.policy_cap), seed)
        out.update(diagnostics)
        fits.update(extra)
    evaluated: dict = {}  # the same policy (BC at every n) is rolled out once
    for name, act in fits.items():
        t1 = time.process_time()
        if id(act) not in evaluated:
            evaluated[id(act)] = metaworld_success(act, task, args.eval, seed,
                                                   horizon=args.horizon)  # fmt: skip
        s, errors = evaluated[id(act)]
        cpu[f"eval {name}"] = time.process_time() - t1
        ok = s[np.isfinite(s)]
        out[name] = {"success": float(ok.mean()) if ok.size else float("nan"),
                     "two_se": float(2 * ok.std(ddof=1) / np.sqrt(ok.size)) if ok.size > 1
                     else float("nan"), "failed": len(errors)}  # fmt: skip
    out["cpu_s"] = time.process_time() - t0
    out["cpu_s_by_part"] = cpu
    return out


def _time_baselined(pairs, eps: Episodes):
    """Relabel the same pairs by return minus the behaviour data's mean return of segments
    cut at the same start step (a teacher-side baseline; the learners still see labels
    only). A stand-in for advantage-based labels: a segment is preferred for beating what
    the behaviour data do at the same point of the episode, not for being late."""
    length = pairs.length
    cut = cut_segments(eps, length, alignment=pairs.alignment or length)
    base = {int(t): float(cut["ret"][cut["start"] == t].mean()) for t in np.unique(cut["start"])}
    ret = eps.reward[pairs.episode[..., None], pairs.start[..., None] + np.arange(length)].sum(-1)
    adv = ret - np.vectorize(base.__getitem__)(pairs.start)
    return replace(pairs, label=oracle_labels(adv[:, 0], adv[:, 1]),
                   teacher="oracle, time-baselined return")  # fmt: skip


def _weighted_start(res, pairs, eps, segments: str) -> float:
    """The PAWS weights' mean segment start step (Σ w_i start_i / Σ w_i)."""
    _, _, starts = weighted_segments(pairs, eps, segments)
    w = res.temperature.weights
    return float(np.sum(w * starts) / np.sum(w))


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
    ap.add_argument("--n", nargs="+", type=int, default=[500])
    ap.add_argument("--eval", type=int, default=20)
    ap.add_argument("--policy-cap", type=int, default=2000)
    ap.add_argument("--diagnose", action="store_true")
    ap.add_argument("--normalize", choices=("off", "on", "both"), default="off")
    ap.add_argument("--methods", nargs="+", choices=METHODS, default=list(DEFAULT_METHODS))
    ap.add_argument(
        "--paws-neff",
        nargs="*",
        type=float,
        default=[],
        help="extra PAWS rows at these n_eff fractions (development seeds only)",
    )
    ap.add_argument(
        "--paws-lambda",
        nargs="*",
        type=float,
        default=[],
        help="the fixed-λ ablation: PAWS rows at these λ, at the largest n only",
    )
    ap.add_argument(
        "--paws-segments",
        nargs="+",
        default=["pairs"],
        choices=("pairs", "pairs+unlabelled"),
        help="weighted set of those rows",
    )
    ap.add_argument(
        "--teacher",
        choices=("return", "time-baselined", "regret"),
        default="return",
        help="oracle labels on segment return (default), on return minus the "
        "behaviour data's mean at the same start step (development seeds), or on the oracle "
        "segment advantage (regret teacher, icml26.paws.teacher)",
    )
    ap.add_argument("--iql-return-range", type=lambda v: None if v == "none" else float(v),
                    default=1000.0, help="P-IQL's reward rescaling (IQLConfig.return_range; "
                    "'none': rewards as A_φ gives them)")  # fmt: skip
    ap.add_argument("--cache", default="results/paws/metaworld-cache")
    ap.add_argument("--generate-only", action="store_true",
                    help="generate and cache the behaviour episodes, train nothing")  # fmt: skip
    ap.add_argument("--json", default="results/paws/metaworld_smoke.json")
    args = ap.parse_args()
    results = []
    if args.generate_only:
        with quiet_dependencies():
            for task in args.tasks:
                for seed in args.seeds:
                    t0 = time.process_time()
                    data = _episodes(task, seed, args)
                    print(f"{task} seed {seed}: {data.episodes.n_episodes} episodes, behaviour "
                          f"success {100 * data.success_rate:.0f}%, "
                          f"{time.process_time() - t0:.1f} s of CPU", flush=True)  # fmt: skip
        return
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
    for task in args.tasks:
        rs = [r for r in results if r["task"] == task]
        if len(rs) < 2:
            continue
        print(f"\n{task}, mean success % over seeds {[r['seed'] for r in rs]} ± 2 SE over seeds")
        for m in methods:
            v = 100 * np.array([r[m]["success"] for r in rs])
            print(
                f"| {m} | {v.mean():.1f} ± {2 * v.std(ddof=1) / np.sqrt(v.size):.1f} | "
                + " / ".join(f"{x:.0f}" for x in v)
                + " |"
            )


if __name__ == "__main__":
    main()
