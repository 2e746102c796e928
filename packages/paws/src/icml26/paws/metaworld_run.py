"""The `paper` preset's Meta-World V3 run: one seed, every task, every preference count.

Per (task, seed): the cached behaviour episodes of :mod:`metaworld_data` (generated and
cached on first use, read back afterwards: ``icml26 reproduce paws --preset paper`` pays for
the data once), oracle-labelled segment pairs on the dense V3 reward (the learners never
see it), then every method of the claim table on the same pairs — the same code as the
point mass (:func:`icml26.paws.reproduce.train_method`) — plus the fixed-λ grid at the
largest n and PAWS with the Transformer A_φ, and success over evaluation rollouts (the
only environment calls). **Locally generated data, not the paper's** (see README).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from icml26.shared import Report, Row, numpy_rng, progress, quiet_dependencies, torch_threads

__all__ = ["MetaWorldConfig", "cached_episodes", "run_metaworld"]


@dataclass(frozen=True)
class MetaWorldConfig:
    """The Meta-World part of a preset: tasks, data size, segment length, rollouts."""

    tasks: tuple[str, ...] = ("peg-insert-side-v3", "push-back-v3")
    episodes: int = 120  # behaviour episodes per (task, seed)
    horizon: int = 200
    length: int = 25  # segment length N
    eval_episodes: int = 20
    cache: str = "results/paws/metaworld-cache"  # relative to the working directory

    def __post_init__(self) -> None:
        if not self.tasks:
            raise ValueError("MetaWorldConfig needs at least one task")
        if self.episodes < 1 or self.eval_episodes < 1:
            raise ValueError("episodes and eval_episodes must be positive")
        if not 2 <= self.length <= self.horizon:
            raise ValueError(
                f"segment length {self.length} must lie in [2, horizon = {self.horizon}]"
            )


def cached_episodes(task: str, seed: int, mw: MetaWorldConfig):
    """The behaviour episodes of (task, seed): read from the cache, or generated and cached
    when missing (the benchmark script ``metaworld_smoke.py`` uses the same file names)."""
    from icml26.paws.metaworld_data import (
        load_metaworld_episodes,
        metaworld_episodes,
        save_metaworld_episodes,
    )

    path = Path(mw.cache) / f"{task}-seed{seed}-E{mw.episodes}-H{mw.horizon}.npz"
    if path.is_file():
        return load_metaworld_episodes(path)
    data = metaworld_episodes(task, mw.episodes, seed, horizon=mw.horizon)
    save_metaworld_episodes(data, path)
    return data


def run_metaworld(config, seed: int, out: Path) -> Report:
    """One seed of a Meta-World preset (``config.metaworld`` set); rows grouped
    ``"<task> n=<n>"``, metric ``success`` (share of evaluation episodes that succeed at
    any step); its ± 2 SE over episodes and failed episodes are in the records."""
    from icml26.paws.advantage import fit_advantage
    from icml26.paws.data import make_preferences
    from icml26.paws.metaworld_data import _require_metaworld, metaworld_success
    from icml26.paws.paws import PAWSConfig, fit_paws
    from icml26.paws.reproduce import (
        SUCCESS,
        normalised,
        oracle_critic,
        report_failure,
        train_method,
    )

    _require_metaworld()  # a clear ImportError naming the extra before any work
    t0 = time.perf_counter()
    mw = config.metaworld
    config = normalised(config)
    dev = config.device
    rows: list[Row] = []
    records: list[dict] = []
    errors: list[str] = []
    with torch_threads(config.threads), quiet_dependencies():
        for task in mw.tasks:
            tc = time.process_time()
            data = cached_episodes(task, seed, mw)
            records.append({"kind": "data", "task": task, "seed": seed,
                            "behaviour_success": data.success_rate,
                            "cpu_s": time.process_time() - tc})  # fmt: skip
            episodes = data.episodes
            critic = oracle_critic(config, episodes, seed, records, {"task": task})
            bc_cache: dict = {}  # per task: BC depends on neither n nor the pairs

            def score(act, task=task) -> tuple[float, float, int]:
                s, errs = metaworld_success(act, task, mw.eval_episodes, seed,
                                            horizon=mw.horizon)  # fmt: skip
                ok = s[np.isfinite(s)]
                mean = float(ok.mean()) if ok.size else float("nan")
                two_se = float(2 * ok.std(ddof=1) / np.sqrt(ok.size)) if ok.size > 1 else 0.0
                return mean, two_se, len(errs)

            def add(method, group, n, act, extra, task=task):
                tc = time.process_time()
                value, two_se, failed = score(act)
                rows.append(Row.of(method, group=group, **{SUCCESS: value}, **extra))
                records.append({"kind": "method", "task": task, "seed": seed, "n": n,
                                "method": method, SUCCESS: value, "two_se_episodes": two_se,
                                "failed_episodes": failed,
                                "eval_cpu_s": time.process_time() - tc, **extra})  # fmt: skip

            for n in progress(config.n_prefs, desc=f"{task}: preference counts"):
                group = f"{task} n={n}"
                pairs = make_preferences(episodes, n, mw.length, numpy_rng(seed, "prefs", n),
                                         teacher=config.teacher, critic=critic)  # fmt: skip
                adv = fit_advantage(pairs, config.advantage, seed=seed, device=dev)
                records.append({"kind": "advantage", "task": task, "seed": seed, "n": n,
                                "val_accuracy": adv.val_accuracy, "epochs": adv.epochs,
                                "stopped_by": adv.stopped_by})  # fmt: skip
                for method in config.methods:
                    tc = time.process_time()
                    try:
                        act, _plateau, extra = train_method(method, pairs, episodes, adv,
                                                            config, seed, bc_cache)  # fmt: skip
                    except Exception as err:  # reported as data, not a row
                        report_failure(errors, records, f"seed {seed}, {group}", method, err)
                        continue
                    extra = {**extra, "train_cpu_s": time.process_time() - tc}
                    if method == "PAWS":
                        extra["adv_val_accuracy"] = adv.val_accuracy
                    add(method, group, n, act, extra)
                paws_cfg = PAWSConfig(neff_fraction=config.neff_fraction, policy=config.policy)

                def grid_paws(lam, pairs=pairs, adv=adv, paws_cfg=paws_cfg):
                    res = fit_paws(pairs, replace(paws_cfg, fixed_lambda=lam), advantage=adv,
                                   seed=seed, device=dev)  # fmt: skip
                    return res.act, {"n_eff": res.temperature.n_eff}

                def transformer_paws(pairs=pairs, paws_cfg=paws_cfg):
                    tc = time.process_time()
                    tcfg = replace(config.advantage, kind="transformer")
                    tadv = fit_advantage(pairs, tcfg, seed=seed, device=dev)
                    res = fit_paws(pairs, paws_cfg, advantage=tadv, seed=seed, device=dev)
                    return res.act, {"adv_val_accuracy": tadv.val_accuracy,
                                     "n_eff": res.temperature.n_eff,
                                     "train_cpu_s": time.process_time() - tc}  # fmt: skip

                extra_runs = []
                if n == max(config.n_prefs):
                    extra_runs += [(f"PAWS λ={lam:g}", lambda lam=lam: grid_paws(lam))
                                   for lam in config.lambda_grid]  # fmt: skip
                if config.transformer:
                    extra_runs.append(("PAWS (Transformer)", transformer_paws))
                for method, fit in extra_runs:
                    try:
                        act, extra = fit()
                    except Exception as err:  # reported as data, not a row
                        report_failure(errors, records, f"seed {seed}, {group}", method, err)
                        continue
                    add(method, group, n, act, extra)
    notes = [
        "Success: share of evaluation episodes (fixed reset seeds per seed) that succeed at "
        "any step; ± 2 SE over episodes per seed in the records.",
        "Locally generated Meta-World V3 data (scripted experts, noisy and ε-random "
        "behaviours; oracle labels on the dense V3 reward: "
        + (
            "the segment advantage under an oracle critic fitted on it"
            if config.teacher == "regret"
            else "segment return"
        )
        + "): not the paper's data.",
        *(f"Failed: {e}" for e in errors),
    ]
    return Report(rows=rows, records=records, notes=notes, seeds=[seed],
                  wall_time_s=time.perf_counter() - t0)  # fmt: skip
