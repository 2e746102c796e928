"""The Meta-World `paper` preset's learning inputs for one (task, seed, n): its cached
behaviour episodes, its regret-labelled preference pairs and its MLP A_φ, made by the same
code and random streams as ``icml26 reproduce paws --preset paper`` (``run_metaworld``), so
that the IQL studies train on exactly the preset's data."""

from __future__ import annotations

import time

from icml26.paws import fit_advantage, make_preferences
from icml26.paws.metaworld_run import cached_episodes
from icml26.paws.reproduce import oracle_critic
from icml26.shared import numpy_rng


def paper_cell(config, task: str, seed: int, n: int):
    """(episodes, pairs, A_φ fit) of the normalised `paper` ``config`` for (task, seed, n)."""
    mw = config.metaworld
    episodes = cached_episodes(task, seed, mw).episodes
    critic = oracle_critic(config, episodes, seed, [], {"task": task})
    pairs = make_preferences(episodes, n, mw.length, numpy_rng(seed, "prefs", n),
                             teacher=config.teacher, critic=critic)  # fmt: skip
    adv = fit_advantage(pairs, config.advantage, seed=seed, device=config.device)
    return episodes, pairs, adv


def paper_rewards(config, task: str, seed: int, n: int):
    """(episodes, A_φ fit, its per-step rewards, set-up CPU-s) for (task, seed, n): the
    rewards P-IQL relabels the episodes with, as the IQL studies use them."""
    c0 = time.process_time()
    episodes, _, adv = paper_cell(config, task, seed, n)
    reward = adv.model.per_step(episodes.obs, episodes.act)
    return episodes, adv, reward, round(time.process_time() - c0, 1)
