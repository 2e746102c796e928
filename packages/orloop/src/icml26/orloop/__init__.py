"""icml26.orloop — ORLoopBench: Solver-in-the-Loop Benchmarks for Self-Correction and
Behavioral Rationality in Operations Research (Ao, Simchi-Levi, Wang; ICML 2026;
arXiv 2601.21008).

Infeasible-model repair as a solver-in-the-loop MDP with HiGHS IIS feedback:

- :class:`Model` — LP/MILP with named rows and columns, MPS/LP files, HiGHS solves;
- :func:`compute_iis`, :func:`highs_iis`, :func:`deletion_filter` — IISs;
- :func:`generate`, :func:`make_instance`, :func:`validate` — the Saboteur (error types A–I);
- :class:`RepairEnv`, :class:`Action` — the MDP with the paper's actions and rewards;
- metrics (RR@k, DA, OP, FP, semantic drift), scripted agents, the GRPO-trained
  policy, an OpenAI-compatible LLM agent;
- ORBias newsvendor instances, bias and drift.
"""

from icml26.orloop.agents import Agent, evaluate, run_episode
from icml26.orloop.baselines import (
    CopyIISAgent,
    DoNothingAgent,
    GreedyDropAgent,
    HeuristicAgent,
    MinimalRepairAgent,
    PhaseOneBlameAgent,
    RandomAgent,
    RegenerateAgent,
)
from icml26.orloop.candidates import Candidate, candidate_repairs
from icml26.orloop.data import (
    load_model,
    read_dataset,
    read_official_records,
    read_records,
    write_dataset,
    write_official_dataset,
)
from icml26.orloop.edits import Edit, apply_edits
from icml26.orloop.elastic import Shift, minimal_bound_shift, minimal_row_shift, phase_one
from icml26.orloop.env import (
    Action,
    ActionFormatError,
    ActionType,
    DebugState,
    RepairEnv,
    apply_repair,
)
from icml26.orloop.grpo import GRPOConfig, train_grpo
from icml26.orloop.iis import (
    IIS,
    compute_iis,
    deletion_filter,
    highs_iis,
    iis_is_irreducible,
    write_iis_model,
)
from icml26.orloop.llm_client import ChatClient, ChatError, ChatNewsvendorAgent, LLMAgent
from icml26.orloop.metrics import (
    EpisodeResult,
    diagnostic_accuracy,
    feasibility_preservation,
    optimality_preservation,
    rr_at_k,
    semantic_drift,
    summarize,
)
from icml26.orloop.model import Model, Solution
from icml26.orloop.mps_check import MPSFormatError, check_mps_file
from icml26.orloop.orbias import (
    BiasReport,
    Newsvendor,
    PullToCentreAgent,
    RationalAgent,
    evaluate_bias,
    pull_to_centre_alpha,
    pull_to_centre_fit,
    relative_bias,
    sample_newsvendors,
    sample_splits,
)
from icml26.orloop.policy import LearnedPolicy
from icml26.orloop.rewards import CompositeWeights, RewardConfig, composite_reward, step_reward
from icml26.orloop.saboteur import (
    ERROR_TYPES,
    Instance,
    Validation,
    difficulty,
    generate,
    inject,
    make_instance,
    make_seed_lp,
    make_seed_milp,
    validate,
)

__all__ = [
    "ERROR_TYPES",
    "IIS",
    "Action",
    "ActionFormatError",
    "ActionType",
    "Agent",
    "BiasReport",
    "Candidate",
    "ChatClient",
    "ChatError",
    "ChatNewsvendorAgent",
    "CompositeWeights",
    "CopyIISAgent",
    "DebugState",
    "DoNothingAgent",
    "Edit",
    "EpisodeResult",
    "GRPOConfig",
    "GreedyDropAgent",
    "HeuristicAgent",
    "Instance",
    "LLMAgent",
    "LearnedPolicy",
    "MPSFormatError",
    "MinimalRepairAgent",
    "Model",
    "Newsvendor",
    "PhaseOneBlameAgent",
    "PullToCentreAgent",
    "RandomAgent",
    "RationalAgent",
    "RegenerateAgent",
    "RepairEnv",
    "RewardConfig",
    "Shift",
    "Solution",
    "Validation",
    "apply_edits",
    "apply_repair",
    "candidate_repairs",
    "check_mps_file",
    "composite_reward",
    "compute_iis",
    "deletion_filter",
    "diagnostic_accuracy",
    "difficulty",
    "evaluate",
    "evaluate_bias",
    "feasibility_preservation",
    "generate",
    "highs_iis",
    "iis_is_irreducible",
    "inject",
    "load_model",
    "make_instance",
    "make_seed_lp",
    "make_seed_milp",
    "minimal_bound_shift",
    "minimal_row_shift",
    "optimality_preservation",
    "phase_one",
    "pull_to_centre_alpha",
    "pull_to_centre_fit",
    "read_dataset",
    "read_official_records",
    "read_records",
    "relative_bias",
    "rr_at_k",
    "run_episode",
    "sample_newsvendors",
    "sample_splits",
    "semantic_drift",
    "step_reward",
    "summarize",
    "train_grpo",
    "validate",
    "write_dataset",
    "write_iis_model",
    "write_official_dataset",
]

__version__ = "0.2.0"
