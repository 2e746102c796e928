"""icml26.teamtr — TeamTR: Trust-Region Fine-Tuning for Multi-Agent LLM Coordination.

Xie, Liu, Fan, Yao, Zhao and Liu, ICML 2026 (arXiv:2605.15207). A heterogeneous team of
causal language models hands off text through a shared context; agents are updated one
at a time on fresh rollouts of the partially updated team, each under a
token-decomposed reverse-KL trust region, with logged surrogates, KL monitors and a
certificate proxy.
"""

from icml26.teamtr.alignment import stage0_alignment
from icml26.teamtr.baselines import METHOD_NAMES, method_config
from icml26.teamtr.policies import PolicySpec, TinyCausalLM, load_policy, make_policy, save_policy
from icml26.teamtr.tasks import (
    ModularChain,
    ProtocolGame,
    TextTask,
    TurnRecord,
    exact_match,
    load_jsonl,
    load_multi_agent_turn,
)
from icml26.teamtr.team import RandomRouter, Rollouts, RoundRobinRouter, Team, rollout
from icml26.teamtr.teamtr import (
    TrainConfig,
    TrainHistory,
    UpdateConfig,
    UpdateLog,
    agent_logprobs,
    evaluate,
    group_advantages,
    kl_estimate,
    ppo_clip_loss,
    token_reverse_kl,
    train,
    update_agents,
)
from icml26.teamtr.warmstart import BCResult, bc_warm_start

__all__ = [
    "METHOD_NAMES",
    "BCResult",
    "ModularChain",
    "PolicySpec",
    "ProtocolGame",
    "RandomRouter",
    "Rollouts",
    "RoundRobinRouter",
    "Team",
    "TextTask",
    "TinyCausalLM",
    "TrainConfig",
    "TrainHistory",
    "TurnRecord",
    "UpdateConfig",
    "UpdateLog",
    "agent_logprobs",
    "bc_warm_start",
    "evaluate",
    "exact_match",
    "group_advantages",
    "kl_estimate",
    "load_jsonl",
    "load_multi_agent_turn",
    "load_policy",
    "make_policy",
    "method_config",
    "ppo_clip_loss",
    "rollout",
    "save_policy",
    "stage0_alignment",
    "token_reverse_kl",
    "train",
    "update_agents",
]

__version__ = "0.1.1"
