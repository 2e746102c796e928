"""TeamTR: per-agent trust-region updates on rollouts of the intermediate team.

The stage loop (paper, §3; reconstructed where marked): for each agent ``i`` in a fixed
or random order, (1) roll out the CURRENT team, in which the agents before ``i`` are
already updated (the intermediate team π̂^{i-1}); (2) sequence-level returns become
group-normalised advantages clipped to ``[-A_max, A_max]``, shared by every token agent
``i`` wrote; (3) a PPO-clip update of agent ``i`` only, with the token-decomposed reverse
KL ``KL(π_i_new ‖ π_i_old)`` on its own tokens, under a trust region (early stop at
KL > δ, or adaptive β) [reconstructed: the paper's δ and rule are not public];
(4) log the surrogate, the KL, the out-of-region flag (KL > δ) and the certificate proxy
``L̂_i − C √KL_i`` [reconstructed formula].

The same engine (:func:`train`) runs the baselines as configurations: stale stage-start
rollouts (``resample_every = n``: naive sequential; with a trust region it is the
"no resampling" ablation), HAPPO's ratio-product correction, a joint simultaneous update
and a single shared policy. Budgets are counted in rollouts (``Team.rollouts_used``).

References: Xie et al., "TeamTR: Trust-Region Fine-Tuning for Multi-Agent LLM
Coordination", ICML 2026 (arXiv:2605.15207): Eq. 9 (intermediate-occupancy surrogate),
Prop. 2 (occupancy shift), Thm. 4 (per-stage certificate).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from icml26.teamtr.team import Rollouts, Team, rollout

__all__ = [
    "TrainConfig",
    "TrainHistory",
    "UpdateConfig",
    "UpdateLog",
    "agent_logprobs",
    "evaluate",
    "group_advantages",
    "kl_estimate",
    "ppo_clip_loss",
    "token_reverse_kl",
    "train",
    "update_agents",
]

log = logging.getLogger(__name__)

METHODS = ("teamtr", "naive", "joint", "happo", "shared")
FORMS = ("grpo", "dapo", "ppo")
TRUST_REGIONS = ("early_stop", "adaptive", "none")


# -- the pieces ----------------------------------------------------------------------------
def group_advantages(
    rewards: torch.Tensor,
    group: torch.Tensor,
    a_max: float,
    *,
    eps: float = 1e-6,
    by_group: bool = True,
) -> torch.Tensor:
    """A = (R − mean_group R) / (std_group R + eps), clipped to [−A_max, A_max].

    ``by_group=False`` normalises over the whole batch (the PPO form without a critic).
    """
    if not a_max > 0:
        raise ValueError(f"A_max must be > 0, got {a_max}")
    rewards = torch.as_tensor(rewards, dtype=torch.float32)
    if rewards.dim() != 1 or group.shape != rewards.shape:
        raise ValueError(
            f"rewards and group must be 1-d of one length, got {tuple(rewards.shape)} "
            f"and {tuple(group.shape)}"
        )
    if not torch.isfinite(rewards).all():
        raise ValueError("rewards contain NaN or inf")
    if not by_group:
        group = torch.zeros_like(group)
    _, inv = group.unique(return_inverse=True)
    k = int(inv.max()) + 1
    count = torch.zeros(k).index_add_(0, inv, torch.ones_like(rewards))
    if (count < 2).any():
        raise ValueError("every group needs G >= 2 rollouts to normalise advantages")
    mean = torch.zeros(k).index_add_(0, inv, rewards) / count
    var = torch.zeros(k).index_add_(0, inv, (rewards - mean[inv]) ** 2) / (count - 1)
    adv = (rewards - mean[inv]) / (var.sqrt()[inv] + eps)
    return adv.clamp(-a_max, a_max)


def agent_logprobs(
    team: Team, agents: Sequence[int], batch: Rollouts, temperature: float = 1.0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Log-softmax over the vocabulary at every position, the taken token's log-prob,
    and the mask of the positions written by ``agents``.

    Shapes ``[B, T-1, V]``, ``[B, T-1]``, ``[B, T-1]`` (position t predicts token t+1).
    Each turn is read with that turn's view of the context (hidden prompt positions)
    through the agent's tokenizer; the mask excludes the prompt, the separators and every
    other agent's tokens.
    """
    a = agents[0]
    policy = team.policies[a]
    device = next(policy.parameters()).device
    mask = batch.mask(agents)[:, 1:]
    turn = batch.turn[:, 1:]
    turns = turn[mask].unique().tolist()
    target = team.view(a, batch.tokens[:, 1:]).to(device)
    if not turns:
        v = policy.spec.vocab if hasattr(policy, "spec") else int(target.max()) + 1
        empty = torch.zeros(*target.shape, v, device=device)
        return empty, torch.zeros(target.shape, device=device), mask.to(device)
    views = torch.cat([team.view(a, batch.view_of_turn(k)) for k in turns]).to(device)
    logits = policy(views[:, :-1]).float() / temperature
    lp = torch.log_softmax(logits, -1).reshape(len(turns), batch.batch, *logits.shape[1:])
    sel = torch.stack([turn == k for k in turns]).to(device)  # [K, B, T-1]
    full = (lp * sel[..., None]).sum(0)
    taken = full.gather(-1, target[..., None])[..., 0]
    return full, taken, mask.to(device)


def token_reverse_kl(
    new_full: torch.Tensor, old_full: torch.Tensor, mask: torch.Tensor
) -> torch.Tensor:
    """Exact token-decomposed reverse KL per sequence: Σ_{u ∈ agent's tokens}
    Σ_v π_new(v|s_u) [log π_new(v|s_u) − log π_old(v|s_u)] (chain rule over the message)."""
    if new_full.shape != old_full.shape:
        raise ValueError(f"shapes differ: {tuple(new_full.shape)} vs {tuple(old_full.shape)}")
    per_tok = (new_full.exp() * (new_full - old_full)).sum(-1)
    return (per_tok * mask).sum(-1)


def kl_estimate(new_lp: torch.Tensor, old_lp: torch.Tensor, kind: str) -> torch.Tensor:
    """Per-token sample estimators of KL(π_new ‖ π_old) on tokens drawn from π_new:
    k1 = log π_new − log π_old; k3 = r − 1 − log r with r = π_old/π_new (verl's
    ``low_var_kl``)."""
    if kind == "k1":
        return new_lp - old_lp
    if kind == "k3":
        log_r = (old_lp - new_lp).clamp(-20, 20)
        return log_r.exp() - 1 - log_r
    raise ValueError(f"kl estimator must be 'k1' or 'k3', got {kind!r}")


def ppo_clip_loss(
    new_lp: torch.Tensor,
    old_lp: torch.Tensor,
    adv: torch.Tensor,
    mask: torch.Tensor,
    clip_low: float,
    clip_high: float,
) -> torch.Tensor:
    """−E_tok[min(r A, clip(r, 1−ε_low, 1+ε_high) A)] over the masked tokens (token-mean)."""
    ratio = (new_lp - old_lp).exp()
    a = adv[:, None].expand_as(ratio) if adv.dim() == 1 else adv
    obj = torch.minimum(ratio * a, ratio.clamp(1 - clip_low, 1 + clip_high) * a)
    denom = mask.sum().clamp_min(1)
    return -(obj * mask).sum() / denom


# -- one update ------------------------------------------------------------------------------
@dataclass(frozen=True)
class UpdateConfig:
    """PPO-clip update of one agent with a reverse-KL trust region."""

    lr: float = 3e-3
    epochs: int = 2
    minibatches: int = 4
    clip: float = 0.2
    clip_high: float | None = None  # None: symmetric; DAPO's clip-higher uses 0.28
    kl_coef: float = 0.0  # β of the penalty (initial β for "adaptive")
    kl_estimator: str = "k3"
    trust_region: str = "early_stop"  # "early_stop" | "adaptive" | "none"
    delta: float = 0.02
    a_max: float = 2.0
    max_grad_norm: float = 1.0

    def __post_init__(self) -> None:
        if not self.delta > 0:
            raise ValueError(f"δ (delta) must be > 0, got {self.delta}")
        if not self.a_max > 0:
            raise ValueError(f"A_max must be > 0, got {self.a_max}")
        if self.trust_region not in TRUST_REGIONS:
            raise ValueError(
                f"trust_region must be one of {TRUST_REGIONS}, got {self.trust_region!r}"
            )
        if self.kl_estimator not in ("k1", "k3"):
            raise ValueError(f"kl_estimator must be 'k1' or 'k3', got {self.kl_estimator!r}")
        if not 0 < self.clip < 1 or self.lr <= 0 or self.epochs < 1 or self.minibatches < 1:
            raise ValueError("need 0 < clip < 1, lr > 0, epochs >= 1, minibatches >= 1")


@dataclass
class UpdateLog:
    """What one agent update logs (the paper's monitors)."""

    agents: tuple[int, ...]
    surrogate: float  # importance-weighted improvement estimate, in return units
    ppo_surrogate: float  # clipped objective in advantage units
    kl: float  # exact token-decomposed reverse KL per sequence on the update batch
    out_of_region: bool
    steps: int
    stopped_early: bool
    beta: float


def _minibatches(b: int, k: int, generator: torch.Generator) -> list[torch.Tensor]:
    perm = torch.randperm(b, generator=generator)
    return [c for c in perm.chunk(k) if len(c)]


def _slice(batch: Rollouts, rows: torch.Tensor) -> Rollouts:
    return Rollouts(
        batch.tokens[rows],
        batch.owner[rows],
        batch.turn[rows],
        batch.route[rows],
        batch.group[rows],
        batch.rewards[rows],
        batch.prompt_len,
        batch.visible,
    )


def update_agents(
    team: Team,
    agents: Sequence[int],
    batch: Rollouts,
    optimizer: torch.optim.Optimizer,
    config: UpdateConfig,
    *,
    advantages: torch.Tensor,
    generator: torch.Generator,
    beta: float | None = None,
    weights: torch.Tensor | None = None,
    temperature: float = 1.0,
) -> UpdateLog:
    """PPO-clip update of the policy of ``agents`` (one agent, or every agent of a shared
    policy) on ``batch``, under the trust region; returns the logged monitors.

    ``weights`` multiplies the advantage per rollout (HAPPO's ratio product).
    Early stop: a minibatch step that takes the exact reverse KL on the whole batch above
    δ is undone and the update ends (so KL ≤ δ always).
    """
    agents = tuple(agents)
    policy = team.policies[agents[0]]
    beta = config.kl_coef if beta is None else beta
    device = next(policy.parameters()).device
    with torch.no_grad():
        old_full, old_lp, mask = agent_logprobs(team, agents, batch, temperature)
    adv = advantages.to(device)
    if weights is not None:
        adv = adv * weights.to(device)
    mask_f = mask.float()
    steps, stopped = 0, False
    kl_now = 0.0
    if mask.any():
        for _ in range(config.epochs):
            for rows in _minibatches(batch.batch, config.minibatches, generator):
                snapshot = [p.detach().clone() for p in policy.parameters()]
                sub = _slice(batch, rows)
                _, new_lp, m = agent_logprobs(team, agents, sub, temperature)
                m = m.float()
                loss = ppo_clip_loss(
                    new_lp,
                    old_lp[rows.to(device)],
                    adv[rows.to(device)],
                    m,
                    config.clip,
                    config.clip if config.clip_high is None else config.clip_high,
                )
                if beta > 0:
                    kl_tok = kl_estimate(new_lp, old_lp[rows.to(device)], config.kl_estimator)
                    loss = loss + beta * (kl_tok * m).sum() / m.sum().clamp_min(1)
                if not torch.isfinite(loss):
                    raise FloatingPointError(f"agent {agents} update loss became {loss.item()}")
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(policy.parameters(), config.max_grad_norm)
                optimizer.step()
                steps += 1
                if config.trust_region == "early_stop":
                    with torch.no_grad():
                        new_full, _, _ = agent_logprobs(team, agents, batch, temperature)
                        kl = token_reverse_kl(new_full, old_full, mask_f).mean().item()
                    if kl > config.delta:
                        with torch.no_grad():
                            for p, s in zip(policy.parameters(), snapshot, strict=True):
                                p.copy_(s)
                        stopped = True
                        break
            if stopped:
                break
    with torch.no_grad():
        new_full, new_lp, _ = agent_logprobs(team, agents, batch, temperature)
        kl_now = token_reverse_kl(new_full, old_full, mask_f).mean().item()
        rho = ((new_lp - old_lp) * mask_f).sum(-1).clamp(-20, 20).exp()
        base = _group_mean(batch.rewards, batch.group).to(device)
        centred = batch.rewards.to(device) - base
        surrogate = ((rho - 1) * centred).mean().item()
        ratio = (new_lp - old_lp).exp()
        ppo_sur = ((ratio * adv[:, None] * mask_f).sum() / mask_f.sum().clamp_min(1)).item()
    if config.trust_region == "adaptive":  # PPO's adaptive KL coefficient
        beta = max(beta, 1e-3)
        if kl_now > 1.5 * config.delta:
            beta *= 2
        elif kl_now < config.delta / 1.5:
            beta /= 2
    return UpdateLog(
        agents, surrogate, ppo_sur, kl_now, kl_now > config.delta, steps, stopped, beta
    )


def _group_mean(rewards: torch.Tensor, group: torch.Tensor) -> torch.Tensor:
    _, inv = group.unique(return_inverse=True)
    k = int(inv.max()) + 1
    count = torch.zeros(k).index_add_(0, inv, torch.ones_like(rewards))
    return (torch.zeros(k).index_add_(0, inv, rewards) / count)[inv]


# -- the stage loop --------------------------------------------------------------------------
@dataclass(frozen=True)
class TrainConfig:
    """One method at one rollout budget.

    ``budget``: batches of ``prompts × group_size`` rollouts in all. ``method``:
    ``"teamtr"`` (fresh rollouts every ``resample_every`` agent updates; ``n`` means once
    per stage, the "no resampling" ablation), ``"naive"`` (stale stage-start rollouts,
    no trust region), ``"happo"`` (stale, ratio-product correction, random order),
    ``"joint"`` (all agents at once on one batch), ``"shared"`` (one policy for all).
    ``form``: advantage/clip form of the update (``grpo``, ``dapo``, ``ppo``).
    """

    method: str = "teamtr"
    form: str = "grpo"
    budget: int = 18
    prompts: int = 32
    group_size: int = 8
    resample_every: int = 1
    order: str = "fixed"
    temperature: float = 1.0
    update: UpdateConfig = field(default_factory=UpdateConfig)
    eval_every: int = 3  # batches between evaluations (matched across methods)
    eval_samples: int = 16  # rollouts per evaluation prompt
    certificate_c: float = 1.0
    regression_tol: float = 0.02

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if self.form not in FORMS:
            raise ValueError(f"form must be one of {FORMS}, got {self.form!r}")
        if self.group_size < 2:
            raise ValueError(f"G (group_size) must be >= 2, got {self.group_size}")
        if self.order not in ("fixed", "random"):
            raise ValueError(f"order must be 'fixed' or 'random', got {self.order!r}")
        if self.budget < 1 or self.prompts < 1 or self.resample_every < 1 or self.eval_every < 1:
            raise ValueError("budget, prompts, resample_every and eval_every must be >= 1")


@dataclass
class TrainHistory:
    """Success at each evaluation, the update logs, and the per-interval monitors."""

    rollouts: list[int] = field(default_factory=list)  # training rollouts at each evaluation
    success: list[float] = field(default_factory=list)
    updates: list[UpdateLog] = field(default_factory=list)
    predicted: list[float] = field(default_factory=list)  # Σ L̂ over an evaluation interval
    proxy: list[float] = field(default_factory=list)  # Σ (L̂ − C √KL)
    realised: list[float] = field(default_factory=list)  # ΔJ over the interval
    verifier_errors: int = 0

    @property
    def final(self) -> float:
        return self.success[-1]

    def regressions(self, tol: float) -> int:
        return sum(b < a - tol for a, b in zip(self.success, self.success[1:], strict=False))

    @property
    def stale_gap(self) -> float:
        gaps = [abs(p - r) for p, r in zip(self.predicted, self.realised, strict=True)]
        return float(sum(gaps) / len(gaps)) if gaps else float("nan")

    @property
    def out_of_region(self) -> float:
        return float(sum(u.out_of_region for u in self.updates) / max(len(self.updates), 1))

    @property
    def certificate_holds(self) -> float:
        """Fraction of intervals where the proxy did not overstate the realised change."""
        ok = [p <= r for p, r in zip(self.proxy, self.realised, strict=True)]
        return float(sum(ok) / len(ok)) if ok else float("nan")


def evaluate(
    team: Team,
    task,
    prompts: torch.Tensor,
    answers: Sequence,
    *,
    samples: int,
    router,
    seed: int,
    temperature: float = 1.0,
) -> float:
    """Mean return of ``samples`` sampled rollouts per prompt (not counted in budgets).

    The same ``seed`` at every evaluation gives common random numbers, so that
    differences between evaluations measure the team, not the draw.
    """
    g = torch.Generator().manual_seed(seed)
    batch = rollout(
        team,
        task,
        prompts,
        answers,
        group_size=samples,
        router=router,
        generator=g,
        temperature=temperature,
        count=False,
    )
    return float(batch.rewards.mean())


def _stage_plan(config: TrainConfig, n: int, generator: torch.Generator) -> list[list[int]]:
    """Agent groups that share one batch of rollouts within a stage."""
    order = list(range(n))
    if config.order == "random" or config.method == "happo":
        order = torch.randperm(n, generator=generator).tolist()
    if config.method in ("joint", "shared"):
        return [order]
    chunk = n if config.method in ("naive", "happo") else config.resample_every
    return [order[i : i + chunk] for i in range(0, n, chunk)]


def train(
    team: Team,
    task,
    config: TrainConfig,
    *,
    router,
    seed: int,
    eval_prompts: torch.Tensor,
    eval_answers: Sequence,
    eval_seed: int,
) -> TrainHistory:
    """Run ``config.method`` for exactly ``config.budget`` batches of rollouts."""
    team.check_router(router)
    n = len(team)
    gen = torch.Generator().manual_seed(seed)
    upd = config.update
    if config.form == "dapo":
        upd = _replace(upd, clip_high=upd.clip_high or 0.28, kl_coef=0.0)
    shared = config.method == "shared"
    if shared and len({id(p) for p in team.policies}) != 1:
        raise ValueError("method 'shared' needs a team whose agents share one policy")
    units = [tuple(range(n))] if shared else [(i,) for i in range(n)]
    optimisers = {u: torch.optim.Adam(team.policies[u[0]].parameters(), lr=upd.lr) for u in units}
    betas = dict.fromkeys(units, upd.kl_coef)
    batch_size = config.prompts * config.group_size
    start = team.rollouts_used
    hist = TrainHistory()

    def _eval() -> float:
        return evaluate(
            team,
            task,
            eval_prompts,
            eval_answers,
            samples=config.eval_samples,
            router=router,
            seed=eval_seed,
            temperature=config.temperature,
        )

    hist.success.append(_eval())
    hist.rollouts.append(0)
    batches, pred, prox = 0, 0.0, 0.0
    while batches < config.budget:
        plan = _stage_plan(config, n, gen)
        if batches + len(plan) > config.budget:
            raise ValueError(
                f"budget of {config.budget} batches is not a whole number of stages of "
                f"{len(plan)} batches for method {config.method!r}"
            )
        for chunk in plan:
            prompts, answers = task.sample(config.prompts, gen)
            batch = rollout(
                team,
                task,
                prompts,
                answers,
                group_size=config.group_size,
                router=router,
                generator=gen,
                temperature=config.temperature,
            )
            batches += 1
            hist.verifier_errors += batch.verifier_errors
            adv = group_advantages(
                batch.rewards, batch.group, upd.a_max, by_group=config.form != "ppo"
            )
            if config.form == "dapo":  # dynamic sampling: groups with one outcome carry no signal
                adv = adv * (_group_std(batch.rewards, batch.group) > 0)
            done: list[int] = []
            weights = torch.ones(batch.batch)
            if config.method == "joint":
                logs = _joint_step(team, chunk, batch, optimisers, upd, adv, gen, config)
            else:
                logs = []
                unit_list = [units[0]] if shared else [(i,) for i in chunk]
                for u in unit_list:
                    with torch.no_grad():
                        _, before, m = agent_logprobs(team, u, batch, config.temperature)
                    log_ = update_agents(
                        team,
                        u,
                        batch,
                        optimisers[u],
                        upd,
                        advantages=adv,
                        generator=gen,
                        beta=betas[u],
                        weights=weights if config.method == "happo" else None,
                        temperature=config.temperature,
                    )
                    betas[u] = log_.beta
                    logs.append(log_)
                    done.extend(u)
                    if config.method == "happo":  # M_{i+1} = M_i · π_i_new / π_i_old
                        with torch.no_grad():
                            _, after, _ = agent_logprobs(team, u, batch, config.temperature)
                            step = ((after - before) * m).sum(-1).clamp(-20, 20).exp()
                        weights = weights * step.cpu()
            for lg in logs:
                hist.updates.append(lg)
                pred += lg.surrogate
                prox += lg.surrogate - config.certificate_c * math.sqrt(max(lg.kl, 0.0))
        if batches % config.eval_every == 0 or batches == config.budget:
            hist.success.append(_eval())
            hist.rollouts.append(team.rollouts_used - start)
            hist.predicted.append(pred)
            hist.proxy.append(prox)
            hist.realised.append(hist.success[-1] - hist.success[-2])
            pred, prox = 0.0, 0.0
    used = team.rollouts_used - start
    if used != config.budget * batch_size:  # matched budgets, asserted by counting
        raise RuntimeError(f"used {used} rollouts, budget was {config.budget * batch_size}")
    return hist


def _group_std(rewards: torch.Tensor, group: torch.Tensor) -> torch.Tensor:
    mean = _group_mean(rewards, group)
    return _group_mean((rewards - mean) ** 2, group).sqrt()


def _joint_step(team, chunk, batch, optimisers, upd, adv, gen, config) -> list[UpdateLog]:
    """Simultaneous update: each agent's minibatch step on the same rows, all at once."""
    agents = [(i,) for i in chunk]
    with torch.no_grad():
        olds = {u: agent_logprobs(team, u, batch, config.temperature) for u in agents}
    high = upd.clip if upd.clip_high is None else upd.clip_high
    steps = 0
    for _ in range(upd.epochs):
        for rows in _minibatches(batch.batch, upd.minibatches, gen):
            sub = _slice(batch, rows)
            for u in agents:
                optimisers[u].zero_grad(set_to_none=True)
            total = 0.0
            for u in agents:
                _, new_lp, m = agent_logprobs(team, u, sub, config.temperature)
                m = m.float()
                old_lp = olds[u][1][rows]
                loss = ppo_clip_loss(new_lp, old_lp, adv[rows], m, upd.clip, high)
                if upd.kl_coef > 0:
                    kl = kl_estimate(new_lp, old_lp, upd.kl_estimator)
                    loss = loss + upd.kl_coef * (kl * m).sum() / m.sum().clamp_min(1)
                total = total + loss
            total.backward()
            for u in agents:
                torch.nn.utils.clip_grad_norm_(team.policies[u[0]].parameters(), upd.max_grad_norm)
                optimisers[u].step()
            steps += 1
    logs = []
    with torch.no_grad():
        base = batch.rewards - _group_mean(batch.rewards, batch.group)
        for u in agents:
            old_full, old_lp, mask = olds[u]
            new_full, new_lp, _ = agent_logprobs(team, u, batch, config.temperature)
            kl = token_reverse_kl(new_full, old_full, mask.float()).mean().item()
            rho = ((new_lp - old_lp) * mask).sum(-1).clamp(-20, 20).exp()
            logs.append(
                UpdateLog(
                    u,
                    ((rho - 1) * base).mean().item(),
                    float("nan"),
                    kl,
                    kl > upd.delta,
                    steps,
                    False,
                    upd.kl_coef,
                )
            )
    return logs


def _replace(cfg: UpdateConfig, **kw) -> UpdateConfig:
    from dataclasses import replace

    return replace(cfg, **kw)
