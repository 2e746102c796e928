"""Implicit Q-learning (IQL), the offline RL step of P-IQL, Preference Transformer + IQL
and IPL.

IQL (Kostrikov et al., 2022) on transitions (s, a, r, s', d):

- V(s) by expectile regression on the target critic: L_V = E[|τ − 1(u < 0)| u²],
  u = min_k Q̄_k(s, a) − V(s), expectile τ (0.7);
- twin Q by TD on V: L_Q = Σ_k E[(r + γ (1 − d) V(s') − Q_k(s, a))²], Polyak-averaged
  targets Q̄ (rate 0.005);
- policy extraction by advantage-weighted regression: max_θ E[min(exp(β (Q̄ − V)), 100)
  log π_θ(a | s)], done here after the critic (IQL's actor never feeds back into its
  critic, so extracting afterwards is the same algorithm) with the shared weighted-MLE
  projection and its plateau rule.

Stopping (house rule): the TD loss itself grows while values propagate, so the plateau
rule watches the *normalised* TD loss L_Q / Var(target) (one minus the regression's R²),
a training loss that falls as the critic fits. Learnt rewards are rescaled as IQL does for
its locomotion data (and Preference Transformer's IQL after it): r ← r · 1000 /
(max episode return − min episode return) over the behaviour episodes, the scale its
β = 3 assumes. With ``IQLConfig(normalize_obs=True)`` the critic z-scores observations
(Q's and V's inputs) with the statistics of its training transitions' observations.

Time limits (``IQLConfig.last_step``): the behaviour episodes end at a time limit and the
offline data hold no observation after their last step. ``"terminal"`` (0.6.0) made that
step a terminal transition (its own observation as the next one, no bootstrap), so Q
learns a time-to-go the Markovian state does not show; ``"drop"`` leaves it out (H − 1
transitions per episode, none terminal), as d3rlpy does for an episode that ends by a
timeout and as IQL's D4RL code treats timeouts (not terminals). The extraction policy
(``IQLConfig.actor``, ``actor_lr``, ``actor_hidden``): the shared tanh-squashed Gaussian
with the policy config's learning rate and sizes, or IQL's own actor (``"gaussian"``,
:class:`~icml26.paws.policy.GaussianPolicy`, learning rate 3e-4, 2 × 256 units, as in the
paper and d3rlpy). :data:`D3RLPY_IQL` holds d3rlpy's settings (the Meta-World `paper`
preset's IQL since 0.7.0); the defaults keep 0.6.0's IQL, which the point-mass presets use.

The update structure of IQL's Algorithm 1 and d3rlpy's ``IQL`` (0.9.0, options, off by
default): ``critic_update="joint"`` takes one Adam step on L_V + Σ_k L_Q,k over V and both
Q (the TD target from V before the step; the package's ``"separate"`` steps V first, then Q
on the updated V); ``actor_update="joint"`` trains the actor alongside the critic, one step
per critic step on the critic's minibatch, weighted by exp(β (min_k Q̄_k − V)) of the
critic as it stands (after its step, before the target update), instead of extracting it
afterwards to its own plateau; ``actor_sampling="uniform"`` (extraction afterwards) draws
uniform minibatches with the weight in the loss, the estimator of d3rlpy's actor loss,
instead of minibatches drawn ∝ weight; ``obs_eps`` > 0 z-scores observations by std +
obs_eps (d3rlpy's ``StandardObservationScaler``: 1e-3) in the critic and the actor.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from icml26.paws.data import Episodes
from icml26.paws.networks import Adam, ObsNorm, default_device, mlp
from icml26.paws.policy import (
    DISTRIBUTIONS,
    SAMPLINGS,
    PolicyConfig,
    PolicyFit,
    fit_weighted_mle,
)
from icml26.shared import Plateau

__all__ = [
    "ACTOR_UPDATES",
    "CRITIC_UPDATES",
    "D3RLPY_IQL",
    "D3RLPY_IQL_STRUCTURE",
    "LAST_STEPS",
    "Critic",
    "IQLConfig",
    "JointActor",
    "Transitions",
    "actor_config",
    "advantage_weights",
    "expectile_loss",
    "fit_iql",
    "iql_policy",
    "iql_transitions",
    "transitions",
]


LAST_STEPS = ("terminal", "drop")
CRITIC_UPDATES = ("separate", "joint")
ACTOR_UPDATES = ("after", "joint")


@dataclass(frozen=True)
class IQLConfig:
    discount: float = 0.99
    expectile: float = 0.7
    beta: float = 3.0  # inverse temperature of exp(β (Q − V))
    max_weight: float = 100.0
    polyak: float = 0.005
    hidden: tuple[int, ...] = (64, 64)  # Q and V (d3rlpy's and the paper's: 256, 256)
    lr: float = 3e-4
    batch_size: int = 256
    return_range: float | None = 1000.0  # rescale rewards to this episode-return range
    plateau_window: int = 100
    plateau_patience: int = 5
    plateau_min_delta: float = 0.01
    cap: int = 3000
    normalize_obs: bool = False  # z-score observations with the training data's statistics
    # an episode's last (time-limit) step: a terminal transition, or no transition (d3rlpy)
    last_step: str = "terminal"  # d3rlpy: "drop"
    # the extraction policy: the shared tanh-Gaussian with the policy config's learning
    # rate and sizes (None), or IQL's actor as in d3rlpy ("gaussian", 3e-4, (256, 256))
    actor: str = "tanh-gaussian"  # the extraction policy's distribution (PolicyConfig's)
    actor_lr: float | None = None  # None: the policy config's learning rate
    actor_hidden: tuple[int, ...] | None = None  # None: the policy config's sizes
    # IQL's update structure (module docstring); d3rlpy: "joint", "joint", "uniform", 1e-3
    critic_update: str = "separate"  # V then Q, two optimisers; or one step on L_V + L_Q
    actor_update: str = "after"  # extraction after the critic; or one actor step per step
    actor_sampling: str = "weighted"  # the extraction's minibatches (PolicyConfig.sampling)
    obs_eps: float = 0.0  # z-score by std + obs_eps (ObsNorm.fit); with normalize_obs

    def __post_init__(self) -> None:
        if self.critic_update not in CRITIC_UPDATES:
            raise ValueError(
                f"critic_update must be one of {CRITIC_UPDATES}, got {self.critic_update!r}"
            )
        if self.actor_update not in ACTOR_UPDATES:
            raise ValueError(
                f"actor_update must be one of {ACTOR_UPDATES}, got {self.actor_update!r}"
            )
        if self.actor_sampling not in SAMPLINGS:
            raise ValueError(
                f"actor_sampling must be one of {SAMPLINGS}, got {self.actor_sampling!r}"
            )
        if not (np.isfinite(self.obs_eps) and self.obs_eps >= 0):
            raise ValueError(f"obs_eps must be finite and non-negative, got {self.obs_eps}")
        if self.last_step not in LAST_STEPS:
            raise ValueError(f"last_step must be one of {LAST_STEPS}, got {self.last_step!r}")
        if self.actor not in DISTRIBUTIONS:
            raise ValueError(f"actor must be one of {sorted(DISTRIBUTIONS)}, got {self.actor!r}")
        if self.actor_lr is not None and not self.actor_lr > 0:
            raise ValueError(f"actor_lr must be positive, got {self.actor_lr}")
        if not 0 < self.expectile < 1:
            raise ValueError(f"the expectile must lie in (0, 1), got {self.expectile}")
        if not 0 <= self.discount < 1:
            raise ValueError(f"the discount must lie in [0, 1), got {self.discount}")
        if not self.beta > 0:
            raise ValueError(f"β must be positive, got {self.beta}")


# IQL as d3rlpy 2.8 and Kostrikov et al. set it (the Meta-World `paper` preset's since
# 0.7.0): 2 × 256 critics, the time-limit step dropped, IQL's Gaussian actor of 2 × 256
# units at learning rate 3e-4. The defaults above keep 0.6.0's IQL (the point-mass presets).
D3RLPY_IQL = {
    "hidden": (256, 256),
    "last_step": "drop",
    "actor": "gaussian",
    "actor_lr": 3e-4,
    "actor_hidden": (256, 256),
}
# d3rlpy's update structure on top (0.9.0 options; README, "Remaining structural
# differences to d3rlpy's IQL"): joint critic step, joint actor, uniform actor minibatches,
# its observation scaler's 1e-3.
D3RLPY_IQL_STRUCTURE = {
    "critic_update": "joint",
    "actor_update": "joint",
    "actor_sampling": "uniform",
    "obs_eps": 1e-3,
}


@dataclass(frozen=True)
class Transitions:
    obs: np.ndarray
    act: np.ndarray
    reward: np.ndarray
    next_obs: np.ndarray
    terminal: np.ndarray


def transitions(episodes: Episodes, reward: np.ndarray, last_step: str = "terminal") -> Transitions:
    """Every behaviour step with the given (learnt) ``reward`` (E, H). The last step of an
    episode (its time limit: the offline data hold no later observation) is a terminal
    (``last_step="terminal"``) or left out (``"drop"``: H − 1 transitions per episode)."""
    if last_step not in LAST_STEPS:
        raise ValueError(f"last_step must be one of {LAST_STEPS}, got {last_step!r}")
    reward = np.asarray(reward, dtype=np.float32)
    if reward.shape != episodes.obs.shape[:2]:
        raise ValueError(f"need one reward per step {episodes.obs.shape[:2]}, got {reward.shape}")
    if not np.all(np.isfinite(reward)):
        raise ValueError("the relabelled rewards contain NaN or inf")
    obs = episodes.obs
    nxt = np.concatenate([obs[:, 1:], obs[:, -1:]], axis=1)
    term = np.zeros(obs.shape[:2], np.float32)
    term[:, -1] = 1.0
    act = episodes.act
    if last_step == "drop":
        obs, act, reward, nxt = obs[:, :-1], act[:, :-1], reward[:, :-1], nxt[:, :-1]
        term = np.zeros(obs.shape[:2], np.float32)
    d = obs.shape[-1]
    if obs.shape[1] == 0:
        raise ValueError("episodes of one step hold no transition once the last is dropped")
    return Transitions(
        obs=obs.reshape(-1, d), act=act.reshape(-1, act.shape[-1]),
        reward=reward.reshape(-1), next_obs=nxt.reshape(-1, d), terminal=term.reshape(-1),
    )  # fmt: skip


class Critic(nn.Module):
    """Twin Q(s, a), their Polyak targets, and V(s)."""

    def __init__(self, obs_dim: int, act_dim: int, hidden: tuple[int, ...] = (64, 64)):
        super().__init__()
        self.q = nn.ModuleList([mlp(obs_dim + act_dim, 1, hidden) for _ in range(2)])
        self.v = mlp(obs_dim, 1, hidden)
        self.q_target = copy.deepcopy(self.q)
        for p in self.q_target.parameters():
            p.requires_grad_(False)
        self.obs_norm = ObsNorm(obs_dim)  # shared by Q, its target and V

    def qs(self, obs: torch.Tensor, act: torch.Tensor, target: bool = False) -> torch.Tensor:
        x = torch.cat([self.obs_norm(obs), act], dim=-1)
        nets = self.q_target if target else self.q
        return torch.stack([n(x).squeeze(-1) for n in nets])  # (2, B)

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.v(self.obs_norm(obs)).squeeze(-1)

    @torch.no_grad()
    def update_target(self, rate: float) -> None:
        for p, t in zip(self.q.parameters(), self.q_target.parameters(), strict=True):
            t.lerp_(p, rate)

    @torch.no_grad()
    def advantage(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        return self.qs(obs, act, target=True).min(dim=0).values - self.value(obs)


def expectile_loss(diff: torch.Tensor, expectile: float) -> torch.Tensor:
    """E[|τ − 1(u < 0)| u²] of u = ``diff``."""
    weight = torch.where(diff < 0, 1.0 - expectile, expectile)
    return (weight * diff.square()).mean()


class JointActor:
    """IQL's actor trained alongside its critic (``IQLConfig(actor_update="joint")``, IQL's
    Algorithm 1 and d3rlpy): :meth:`step` takes one Adam step on the critic's minibatch,
    loss −mean(w log π(a | s)) with w = min(exp(β (min_k Q̄_k(s, a) − V(s))), max_weight)
    from the critic as it stands. It runs as long as the critic (its plateau rule and cap)."""

    def __init__(
        self,
        obs: np.ndarray,
        act_dim: int,
        config: IQLConfig,
        policy_config: PolicyConfig,
        *,
        seed: int = 0,
        device=None,
    ):
        """``obs``: the training observations (the normaliser's statistics)."""
        pc, dev = policy_config, default_device(device)
        torch.manual_seed(seed)  # the extraction's initial parameters
        policy = DISTRIBUTIONS[pc.distribution](obs.shape[1], int(act_dim), pc.hidden)
        if pc.normalize_obs:
            policy.obs_norm.fit(obs, pc.obs_eps)
        self.policy = policy.to(dev)
        self.opt = Adam(self.policy.parameters(), lr=pc.lr)
        self.beta, self.max_weight = config.beta, config.max_weight
        self.losses: list[float] = []

    def step(self, obs: torch.Tensor, act: torch.Tensor, critic: Critic) -> None:
        with torch.no_grad():
            w = torch.exp(self.beta * critic.advantage(obs, act)).clamp(max=self.max_weight)
        loss = -(w * self.policy.log_prob(obs, act)).mean()
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        self.losses.append(float(loss.detach()))

    def result(self, critic_summary: dict) -> PolicyFit:
        self.policy.eval()
        plateau = {"steps": len(self.losses), "reason": f"joint ({critic_summary['reason']})",
                   "best_window_loss": None}  # fmt: skip
        return PolicyFit(policy=self.policy, plateau=plateau, losses=self.losses)


def fit_iql(
    data: Transitions,
    config: IQLConfig | None = None,
    *,
    seed: int = 0,
    device=None,
    on_step: Callable[[int, Critic], None] | None = None,
    trace: list[tuple[float, float, float, float]] | None = None,
    actor: JointActor | None = None,
) -> tuple[Critic, dict]:
    """IQL's critic (module docstring); returns it and the plateau summary.

    ``on_step(step, critic)``, when given, is called after every gradient step (the
    budget study extracts policies from intermediate critics; it must not train them).
    ``trace``, when given, receives one tuple per gradient step: (the normalised TD loss
    the plateau rule watches, the TD loss L_Q, the variance of the TD targets, V's
    expectile loss). ``actor`` (a :class:`JointActor`), when given, takes one step per
    critic step on the critic's minibatch, before the target update (``actor_update``
    "joint")."""
    c = config or IQLConfig()
    dev = default_device(device)
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    t = {k: torch.as_tensor(getattr(data, k), device=dev) for k in Transitions.__annotations__}
    critic = Critic(data.obs.shape[1], data.act.shape[1], c.hidden)
    if c.normalize_obs:
        critic.obs_norm.fit(data.obs, c.obs_eps)  # the training transitions only
    critic = critic.to(dev)
    joint = c.critic_update == "joint"
    if joint:  # one optimiser over Q and V (Adam is per parameter: one step of both)
        opt = Adam(list(critic.q.parameters()) + list(critic.v.parameters()), lr=c.lr)
    else:
        q_opt = Adam(critic.q.parameters(), lr=c.lr)
        v_opt = Adam(critic.v.parameters(), lr=c.lr)
    rule = Plateau(c.plateau_window, c.plateau_patience, c.plateau_min_delta, c.cap)
    n = data.obs.shape[0]
    while not rule.stopped:
        idx = torch.randint(0, n, (c.batch_size,), generator=gen).to(dev)
        o, a, r = t["obs"][idx], t["act"][idx], t["reward"][idx]
        with torch.no_grad():
            q_t = critic.qs(o, a, target=True).min(dim=0).values
        v_loss = expectile_loss(q_t - critic.value(o), c.expectile)
        if not joint:  # V first; Q's TD target then uses the updated V
            v_opt.zero_grad()
            v_loss.backward()
            v_opt.step()
        with torch.no_grad():  # joint: V before the step
            v_next = critic.value(t["next_obs"][idx])
            target = r + c.discount * (1 - t["terminal"][idx]) * v_next
        q = critic.qs(o, a)
        q_loss = F.mse_loss(q, target.expand_as(q))  # the members' mean (the rule's)
        if joint:  # one step on L_V + Σ_k L_Q,k
            opt.zero_grad()
            (v_loss + q.shape[0] * q_loss).backward()
            opt.step()
        else:
            q_opt.zero_grad()
            q_loss.backward()
            q_opt.step()
        if actor is not None:
            actor.step(o, a, critic)
        critic.update_target(c.polyak)
        td, var = float(q_loss.detach()), float(target.var())
        rule.update(td / (var + 1e-8))
        if trace is not None:
            trace.append((td / (var + 1e-8), td, var, float(v_loss.detach())))
        if on_step is not None:
            on_step(rule.steps, critic)
    critic.eval()
    return critic, rule.summary()


def advantage_weights(
    critic: Critic, obs: np.ndarray, act: np.ndarray, config: IQLConfig | None = None
) -> np.ndarray:
    """IQL's extraction weights min(exp(β (Q̄(s, a) − V(s))), max_weight) per step."""
    c = config or IQLConfig()
    dev = next(critic.parameters()).device
    o = torch.as_tensor(np.asarray(obs, np.float32), device=dev)
    a = torch.as_tensor(np.asarray(act, np.float32), device=dev)
    adv = critic.advantage(o, a).double().cpu().numpy()
    return np.minimum(np.exp(np.minimum(c.beta * adv, 50.0)), c.max_weight)


def actor_config(config: IQLConfig, policy_config: PolicyConfig | None) -> PolicyConfig:
    """The extraction policy's config: ``policy_config`` with IQL's actor distribution,
    learning rate, sizes, minibatch sampling and observation scaling when ``config`` sets
    them."""
    pc = policy_config or PolicyConfig()
    lr = pc.lr if config.actor_lr is None else config.actor_lr
    hidden = pc.hidden if config.actor_hidden is None else tuple(config.actor_hidden)
    want = {"distribution": config.actor, "lr": lr, "hidden": hidden,
            "sampling": config.actor_sampling, "obs_eps": config.obs_eps}  # fmt: skip
    if all(getattr(pc, k) == v for k, v in want.items()):
        return pc
    return replace(pc, **want)


def iql_transitions(
    episodes: Episodes, reward: np.ndarray, config: IQLConfig | None = None
) -> Transitions:
    """The behaviour steps relabelled with ``reward`` (E, H), rescaled to IQL's
    episode-return range when ``config.return_range`` is set."""
    c = config or IQLConfig()
    reward = np.asarray(reward, dtype=np.float64)
    if c.return_range is not None:
        returns = reward.sum(axis=1)
        spread = float(returns.max() - returns.min())
        reward = reward * (c.return_range / spread if spread > 0 else 1.0)
    return transitions(episodes, reward, c.last_step)


def iql_policy(
    episodes: Episodes,
    reward: np.ndarray,
    config: IQLConfig | None = None,
    policy_config: PolicyConfig | None = None,
    *,
    seed: int = 0,
    device=None,
) -> tuple[PolicyFit, dict]:
    """IQL on ``episodes`` relabelled with ``reward`` (E, H): critic, then extraction (or
    the actor trained with the critic, ``actor_update="joint"``)."""
    c = config or IQLConfig()
    data = iql_transitions(episodes, reward, c)
    pc = actor_config(c, policy_config)
    if c.actor_update == "joint":
        actor = JointActor(data.obs, data.act.shape[1], c, pc, seed=seed, device=device)
        critic, summary = fit_iql(data, c, seed=seed, device=device, actor=actor)
        w = advantage_weights(critic, data.obs, data.act, c)  # the final critic's (reported)
        pol = actor.result(summary)
    else:
        critic, summary = fit_iql(data, c, seed=seed, device=device)
        w = advantage_weights(critic, data.obs, data.act, c)
        pol = fit_weighted_mle(data.obs, data.act, w, pc, seed=seed, device=device)
    return pol, {"critic_plateau": summary, "clipped_share": float(np.mean(w >= c.max_weight))}
