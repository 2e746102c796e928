"""Group-relative policy optimisation of :class:`~icml26.orloop.policy.LearnedPolicy`.

GRPO as the paper uses it (TRL; group size 4–8, no value network): for each problem
sample a group of ``G`` rollouts, score each with the solver-verified composite reward
``R = 0.5·R_outcome + 0.3·R_diag + 0.2·R_eff``, and push up the log-likelihood of
each rollout by its group-normalised advantage ``A_i = (R_i − mean_G R) / (std_G R + ε)``.
Groups whose rewards are all equal carry no signal and are skipped (the group
filtering the brief recommends against reward-variance collapse). With one gradient
step per batch the update is on-policy, so the clipped ratio is 1 and no KL term is
used (the paper's final phase dropped KL). The outcome reward is graded by
optimality preservation (``100·OP``) by default — see :mod:`~icml26.orloop.rewards`.

Rollouts replay the environment's transitions (the same repair semantics and solver
calls); transitions are cached per (problem, actions so far), since solving is
deterministic and a group revisits the same states.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from icml26.orloop.candidates import FEATURES, Candidate, apply_candidate, candidate_repairs
from icml26.orloop.env import diagnosis_target
from icml26.orloop.iis import compute_iis
from icml26.orloop.metrics import optimality_preservation
from icml26.orloop.model import Model, Solution
from icml26.orloop.policy import DIAG_FEATURES, LearnedPolicy, diagnosis_features, sigmoid, softmax
from icml26.orloop.rewards import CompositeWeights, composite_reward
from icml26.orloop.saboteur import Instance
from icml26.shared import numpy_rng, progress

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GRPOConfig:
    """Knobs of the GRPO run (paper: group 4, 8 problems per batch, lr 1e-5 for an LLM)."""

    group_size: int = 8
    problems_per_batch: int = 8
    iterations: int = 40
    learning_rate: float = 0.1
    max_steps: int = 5
    graded: bool = True
    filter_zero_variance: bool = True
    seed: int = 0
    # convergence on training data: stop when the smoothed mean training reward has not
    # improved by ``min_delta`` for ``patience`` iterations (``iterations`` is the cap)
    patience: int | None = None
    min_delta: float = 1.0
    smoothing: float = 0.5


@dataclass
class _Node:
    solution: Solution
    model: Model
    iis_rows: tuple[str, ...]
    iis_bounds: tuple[tuple[str, str], ...] = ()
    candidates: list[Candidate] | None = None


@dataclass
class _Problem:
    instance: Instance
    nodes: dict[tuple[str, ...], _Node] = field(default_factory=dict)
    _diag: np.ndarray | None = None

    def diag_features(self) -> np.ndarray:
        if self._diag is None:
            self._diag = diagnosis_features(self.instance.model)
        return self._diag

    def node(self, path: tuple[str, ...], parent: _Node | None, cand: Candidate | None) -> _Node:
        if path in self.nodes:
            return self.nodes[path]
        if parent is None:
            inst = self.instance
            node = _Node(Solution("INFEASIBLE"), inst.model, inst.iis.rows, inst.iis.bounds)
        else:
            model = apply_candidate(parent.model, cand.action)  # type: ignore[union-attr]
            if model.is_mip and model.is_infeasible(exact=False):
                sol = Solution("INFEASIBLE")
            else:
                sol = model.solve()
            iis = compute_iis(model) if sol.infeasible else None
            node = _Node(sol, model, iis.rows if iis else (), iis.bounds if iis else ())
        self.nodes[path] = node
        return node

    def candidates(self, node: _Node) -> list[Candidate]:
        if node.candidates is None:
            node.candidates = candidate_repairs(
                node.model, list(node.iis_rows), list(node.iis_bounds)
            )
        return node.candidates


def _key(c: Candidate) -> str:
    a = c.action
    return f"{a.type.value}:{a.target}:{a.value}:{a.value2}"


def _rollout(
    problem: _Problem,
    theta: np.ndarray,
    phi: np.ndarray,
    rng: np.random.Generator,
    config: GRPOConfig,
    weights: CompositeWeights,
) -> tuple[float, np.ndarray, np.ndarray, dict[str, Any]]:
    """One sampled episode: reward and the gradients of its log-likelihood."""
    g_theta = np.zeros_like(theta)
    g_phi = np.zeros_like(phi)
    path: tuple[str, ...] = ()
    node = problem.node(path, None, None)
    diagnosed: list[str] = []
    steps = 0
    for t in range(config.max_steps):
        if node.solution.optimal:
            break
        cands = problem.candidates(node)
        if not cands:
            break
        f = np.stack([c.features for c in cands])
        p = softmax(f @ theta)
        k = int(rng.choice(len(cands), p=p))
        g_theta += f[k] - p @ f
        chosen = cands[k]
        if t == 0:
            g = problem.diag_features()
            q = sigmoid(g @ phi)
            y = rng.random(q.shape) < q
            g_phi += ((y - q)[:, None] * g).sum(0)
            diagnosed += [r for r, yi in zip(node.model.row_names, y, strict=True) if yi]
        if chosen.action.target and chosen.action.target not in diagnosed:
            diagnosed.append(chosen.action.target)
        path = (*path, _key(chosen))
        node = problem.node(path, node, chosen)
        steps += 1
    inst = problem.instance
    status = node.solution.status
    op = None
    if node.solution.optimal:
        op = optimality_preservation(node.solution.objective, inst.original_objective)
    parts = composite_reward(
        status,
        diagnosed,
        diagnosis_target(inst.iis),
        steps,
        op=op if config.graded else None,
        graded=config.graded and op is not None,
        weights=weights,
    )
    return parts["total"], g_theta, g_phi, parts


def train_grpo(
    instances: list[Instance],
    config: GRPOConfig | None = None,
    *,
    weights: CompositeWeights | None = None,
    show_progress: bool = False,
) -> tuple[LearnedPolicy, list[dict[str, float]]]:
    """Train a :class:`LearnedPolicy` on ``instances``; returns it and per-iteration stats."""
    config = config or GRPOConfig()
    weights = weights or CompositeWeights()
    if not instances:
        raise ValueError("GRPO needs at least one training instance")
    if config.group_size < 2:
        raise ValueError(f"group_size must be at least 2, got {config.group_size}")
    rng = numpy_rng(config.seed, "grpo")
    problems = [_Problem(inst) for inst in instances]
    theta = np.zeros(len(FEATURES))
    phi = np.zeros(len(DIAG_FEATURES))
    m_t, v_t = np.zeros_like(theta), np.zeros_like(theta)
    m_p, v_p = np.zeros_like(phi), np.zeros_like(phi)
    history: list[dict[str, float]] = []
    b1, b2, eps = 0.9, 0.999, 1e-8
    if config.patience is not None and config.patience < 1:
        raise ValueError(f"patience must be positive, got {config.patience}")
    smooth: float | None = None
    best: float | None = None
    stale = 0
    steps = range(config.iterations)
    for it in progress(steps, desc="GRPO") if show_progress else steps:
        batch = rng.choice(
            len(problems), size=min(config.problems_per_batch, len(problems)), replace=False
        )
        grad_t = np.zeros_like(theta)
        grad_p = np.zeros_like(phi)
        rewards, used = [], 0
        for idx in batch:
            group = [
                _rollout(problems[idx], theta, phi, rng, config, weights)
                for _ in range(config.group_size)
            ]
            r = np.array([g[0] for g in group])
            rewards.extend(r.tolist())
            if config.filter_zero_variance and r.std() < 1e-9:
                continue
            adv = (r - r.mean()) / (r.std() + 1e-6)
            for a, (_, gt, gp, _) in zip(adv, group, strict=True):
                grad_t += a * gt
                grad_p += a * gp
            used += 1
        if used:
            n = used * config.group_size
            # gradient ascent with Adam on the mean advantage-weighted log-likelihood
            for param, grad, m, v in ((theta, grad_t / n, m_t, v_t), (phi, grad_p / n, m_p, v_p)):
                m *= b1
                m += (1 - b1) * grad
                v *= b2
                v += (1 - b2) * grad**2
                m_hat = m / (1 - b1 ** (it + 1))
                v_hat = v / (1 - b2 ** (it + 1))
                param += config.learning_rate * m_hat / (np.sqrt(v_hat) + eps)
        mean_r = float(np.mean(rewards))
        smooth = (
            mean_r
            if smooth is None
            else config.smoothing * smooth + (1 - config.smoothing) * mean_r
        )
        history.append(
            {"iteration": it, "mean_reward": mean_r, "smoothed": smooth, "groups_used": used}
        )
        log.info("GRPO iteration %d: mean reward %.2f", it, mean_r)
        if best is None or smooth > best + config.min_delta:
            best, stale = smooth, 0
        else:
            stale += 1
        if config.patience is not None and stale >= config.patience:
            log.info("GRPO stopped at iteration %d: reward plateau", it)
            break
    return LearnedPolicy(theta, phi), history
