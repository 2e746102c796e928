"""The comparisons, as configurations of the one engine (:func:`icml26.teamtr.train`).

Every RL method gets the same number of rollouts (``TrainConfig.budget`` batches);
methods that roll out once per stage get more stages. The methods:

- ``teamtr``: fresh rollouts of the intermediate team before every agent update, trust
  region (early stop at KL > δ).
- ``naive`` (PPO, GRPO, DAPO forms): sequential per-agent updates on the stale stage-start
  rollouts (the official ``run_bc_stage.py`` loop), GRPO's k3 penalty β = 0.001 and no
  trust region. The PPO form is reconstructed as a batch-normalised advantage (no critic:
  returns are sequence-level).
- ``joint``: every agent updated simultaneously on one batch (joint GRPO / IPPO-style).
  With disjoint parameters and per-agent losses it is the same update as ``naive``.
- ``happo``: stale rollouts, random order, advantage times the product of the
  already-updated agents' sequence ratios (HAPPO, Zhong et al. 2024).
- ``shared``: one policy plays every role (GRPO on all message tokens).
- ablations of TeamTR: ``no_resampling`` (stale rollouts, trust region kept),
  ``resample_half`` (fresh rollouts every 2 agent updates), ``no_trust_region``.
- ``bc``: the warm start without RL.
"""

from __future__ import annotations

from dataclasses import replace

from icml26.teamtr.teamtr import TrainConfig

__all__ = ["METHOD_NAMES", "method_config"]

METHOD_NAMES = {
    "teamtr": "TeamTR",
    "naive_grpo": "naive sequential (GRPO)",
    "naive_ppo": "naive sequential (PPO)",
    "naive_dapo": "naive sequential (DAPO)",
    "joint": "joint GRPO",
    "happo": "HAPPO",
    "shared": "single shared policy",
    "no_resampling": "TeamTR − resampling",
    "resample_half": "TeamTR, resample every 2",
    "no_trust_region": "TeamTR − trust region",
    "bc": "BC warm start",
}

NAIVE_KL = 0.001  # the official kl_loss_coef


def method_config(name: str, base: TrainConfig, agents: int) -> TrainConfig:
    """The :class:`TrainConfig` of method ``name`` from a TeamTR ``base`` config."""
    u = base.update
    off = replace(u, trust_region="none", kl_coef=NAIVE_KL)
    if name == "teamtr":
        return replace(base, method="teamtr", resample_every=1)
    if name.startswith("naive_"):
        return replace(base, method="naive", form=name.removeprefix("naive_"), update=off)
    if name == "joint":
        return replace(base, method="joint", update=off)
    if name == "happo":
        return replace(base, method="happo", update=off)
    if name == "shared":
        return replace(base, method="shared", update=off)
    if name == "no_resampling":
        return replace(base, method="teamtr", resample_every=agents)
    if name == "resample_half":
        return replace(base, method="teamtr", resample_every=2)
    if name == "no_trust_region":
        return replace(base, method="teamtr", update=replace(u, trust_region="none"))
    raise ValueError(f"unknown method {name!r}; known: {sorted(METHOD_NAMES)}")
