"""The comparisons, on the same data, networks, budget rule and seeds as PAWS.

- **BC**: maximum likelihood on every behaviour step.
- **Filtered BC** (the simplest strong baseline): BC on the preferred member of each pair.
- **P-IQL-lite** (ours, the fast tier's stand-in for P-IQL): a per-step Markovian reward
  r_φ(s, a) learnt from the same preferences with the same BCE (Σ_t r_φ over a segment is
  the preference logit), every behaviour step relabelled with r_φ, Monte Carlo returns
  G_t = Σ_k γ^k r_φ(s_{t+k}, a_{t+k}) within each episode, V(s) by regression, and AWR
  weights exp((G_t − V(s_t))/β) with β set by the same n_eff rule (the step count). IQL's
  expectile TD is replaced by Monte Carlo returns; d3rlpy's IQL is the benchmark peer.
- **CPL** (jhejna/cpl, ``research/algs/cpl.py``): the policy's own α·Σ_t log π(a_t|s_t)
  is the segment advantage in a conservative ("biased") logistic loss:
  −log σ(A⁺ − b·A⁻) with b = ``bias`` ∈ (0, 1].
- **CPL+KL** (``research/algs/cpl_kl.py``): BC pre-training, a frozen copy as the
  reference, then the CPL loss on α·Σ_t (log π − log π_ref).

- **P-IQL** (own IQL): the same per-step r_φ as P-IQL-lite, then IQL (:mod:`.iql`:
  expectile V, twin-Q TD, AWR extraction with β = 3); d3rlpy's IQL is the benchmark peer.
- **Preference Transformer + IQL** (Kim et al. 2023): the PT reward model
  (:mod:`.preference_transformer`) trained on the same pairs, every behaviour step
  relabelled with its non-Markovian r̂_t, then the same IQL.
- **IPL** (Hejna & Sadigh 2023, IPL-IQL): no reward model; the implied reward of the
  critic, r_Q(s, a) = Q(s, a) − γ V(s'), is fitted to the preferences by the Bradley–Terry
  BCE on its segment sums plus a squared-reward regulariser (weight 0.5) on preference and
  behaviour steps alike; V by IQL's expectile regression on the target critic; the policy
  by IQL's AWR extraction. Stopped by the plateau of the preference + regulariser loss.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
from torch.nn import functional as F

from icml26.paws.advantage import AdvantageConfig, AdvantageFit, fit_advantage
from icml26.paws.data import Episodes
from icml26.paws.iql import (
    Critic,
    IQLConfig,
    JointActor,
    actor_config,
    advantage_weights,
    expectile_loss,
    iql_policy,
)
from icml26.paws.networks import Adam, ObsNorm, default_device, mlp
from icml26.paws.policy import (
    PolicyConfig,
    PolicyFit,
    TanhGaussianPolicy,
    fit_weighted_mle,
    train_loop,
)
from icml26.paws.preference_transformer import PreferenceTransformer, relabel_episodes
from icml26.paws.preferences import SegmentPairs
from icml26.paws.weights import neff_target, solve_temperature
from icml26.shared import Plateau

__all__ = [
    "CPLConfig",
    "IPLConfig",
    "PIQLConfig",
    "behaviour_cloning",
    "biased_bce",
    "cpl",
    "filtered_bc",
    "ipl",
    "piql",
    "piql_lite",
    "pt_iql",
]


def behaviour_cloning(
    episodes: Episodes, config: PolicyConfig | None = None, *, seed: int = 0, device=None
) -> PolicyFit:
    """BC on every behaviour step."""
    obs, act = episodes.steps()
    return fit_weighted_mle(obs, act, None, config, seed=seed, device=device)


def filtered_bc(
    pairs: SegmentPairs, config: PolicyConfig | None = None, *, seed: int = 0, device=None
) -> PolicyFit:
    """BC on the preferred segment of each (non-tied) pair."""
    obs, act = pairs.preferred()
    if obs.shape[0] == 0:
        raise ValueError("every pair is a tie: filtered BC has no preferred segment")
    return fit_weighted_mle(
        obs.reshape(-1, obs.shape[-1]), act.reshape(-1, act.shape[-1]), None, config,
        seed=seed, device=device,
    )  # fmt: skip


@dataclass(frozen=True)
class PIQLConfig:
    discount: float = 0.99
    neff_fraction: float = 0.1  # of n × N steps, as PAWS's per-step count
    value_hidden: tuple[int, ...] = (64, 64)


def _returns_to_go(reward: np.ndarray, discount: float) -> np.ndarray:
    g = np.zeros_like(reward, dtype=np.float64)
    acc = np.zeros(reward.shape[0])
    for t in range(reward.shape[1] - 1, -1, -1):
        acc = reward[:, t] + discount * acc
        g[:, t] = acc
    return g


def piql_lite(
    pairs: SegmentPairs,
    episodes: Episodes,
    config: PIQLConfig | None = None,
    policy_config: PolicyConfig | None = None,
    *,
    reward_model: AdvantageFit | None = None,
    advantage_config: AdvantageConfig | None = None,
    seed: int = 0,
    device=None,
) -> tuple[PolicyFit, dict]:
    """P-IQL-lite (module docstring). ``reward_model`` may reuse PAWS's A_φ (the same
    per-step MLP trained by the same BCE is exactly a Markovian preference reward)."""
    c, pc = config or PIQLConfig(), policy_config or PolicyConfig()
    dev = default_device(device)
    fit = reward_model or fit_advantage(pairs, advantage_config, seed=seed, device=device)
    reward = fit.model.per_step(episodes.obs, episodes.act)  # (E, H): relabelled, learnt
    g = _returns_to_go(reward, c.discount)
    obs, act = episodes.steps()
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    norm = ObsNorm(obs.shape[1])
    if pc.normalize_obs:
        norm.fit(obs)  # the behaviour steps V is trained on
    value = torch.nn.Sequential(norm, mlp(obs.shape[1], 1, c.value_hidden)).to(dev)
    ot = torch.as_tensor(obs, device=dev)
    gt = torch.as_tensor(g.reshape(-1), dtype=torch.float32, device=dev)
    scale = float(gt.std()) or 1.0

    def value_loss(_: int) -> torch.Tensor:
        idx = torch.randint(0, ot.shape[0], (pc.batch_size,), generator=gen).to(dev)
        return F.mse_loss(value(ot[idx]).squeeze(-1), gt[idx] / scale)

    value_summary, _ = train_loop(value.parameters(), value_loss, pc)
    with torch.no_grad():
        v = value(ot).squeeze(-1).double().cpu().numpy() * scale
    adv = g.reshape(-1) - v
    temp = solve_temperature(adv, neff_target(c.neff_fraction, len(pairs) * pairs.length))
    pol = fit_weighted_mle(obs, act, temp.weights, pc, seed=seed, device=device)
    return pol, {"value_plateau": value_summary, "beta": temp.lam, "n_eff": temp.n_eff}


# -- CPL --------------------------------------------------------------------------------
def biased_bce(adv_first: torch.Tensor, adv_second: torch.Tensor, label: torch.Tensor, bias=1.0):
    """CPL's conservative logistic loss; ``label`` = P[first ≻ second]:
    y·softplus(−(A¹ − b·A²)) + (1 − y)·softplus(−(A² − b·A¹))."""
    first = F.softplus(-(adv_first - bias * adv_second))
    second = F.softplus(-(adv_second - bias * adv_first))
    return (label * first + (1 - label) * second).mean()


@dataclass(frozen=True)
class CPLConfig:
    alpha: float = 0.1
    bias: float = 0.5
    bc_coeff: float = 0.0
    batch_pairs: int = 32
    kl: bool = False  # CPL+KL: BC pre-training and a frozen reference policy

    def __post_init__(self) -> None:
        if not 0 < self.bias <= 1:
            raise ValueError(f"CPL's contrastive bias must lie in (0, 1], got {self.bias}")
        if not self.alpha > 0:
            raise ValueError(f"CPL's α must be positive, got {self.alpha}")


def cpl(
    pairs: SegmentPairs,
    config: CPLConfig | None = None,
    policy_config: PolicyConfig | None = None,
    *,
    episodes: Episodes | None = None,
    seed: int = 0,
    device=None,
    pretrained: PolicyFit | None = None,
) -> PolicyFit:
    """CPL (or CPL+KL with ``config.kl``; its BC pre-training uses ``episodes`` when given,
    else both members of every pair). ``pretrained`` (CPL+KL only) is that BC fit done
    already — ``behaviour_cloning(episodes, policy_config, seed=seed)`` — and is copied,
    not trained again (the same parameters, so the same result)."""
    c, pc = config or CPLConfig(), policy_config or PolicyConfig()
    dev = default_device(device)
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    obs = torch.as_tensor(pairs.obs, device=dev)
    act = torch.as_tensor(pairs.act, device=dev)
    y = torch.as_tensor(pairs.label, device=dev)
    reference = None
    if c.kl and pretrained is not None:
        policy = copy.deepcopy(pretrained.policy).to(dev)
        reference = copy.deepcopy(policy).eval()
        for p in reference.parameters():
            p.requires_grad_(False)
        policy.train()
    elif c.kl:
        if episodes is not None:
            so, sa = episodes.steps()
        else:
            so_, sa_ = pairs.segments()
            so, sa = so_.reshape(-1, pairs.obs_dim), sa_.reshape(-1, pairs.act_dim)
        pre = fit_weighted_mle(so, sa, None, pc, seed=seed, device=device)
        policy = pre.policy
        reference = copy.deepcopy(policy).eval()
        for p in reference.parameters():
            p.requires_grad_(False)
        policy.train()
    else:
        policy = TanhGaussianPolicy(pairs.obs_dim, pairs.act_dim, pc.hidden).to(dev)

    def seg_adv(o: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
        lp = policy.log_prob(o, a)
        if reference is not None:
            with torch.no_grad():
                lp_ref = reference.log_prob(o, a)
            lp = lp - lp_ref
        return c.alpha * lp.sum(dim=-1), lp

    def loss_fn(_: int) -> torch.Tensor:
        b = torch.randint(0, len(pairs), (c.batch_pairs,), generator=gen).to(dev)
        a1, lp1 = seg_adv(obs[b, 0], act[b, 0])
        a2, lp2 = seg_adv(obs[b, 1], act[b, 1])
        loss = biased_bce(a1, a2, y[b], c.bias)
        if c.bc_coeff:
            loss = loss - c.bc_coeff * torch.cat([lp1, lp2]).mean()
        return loss

    summary, losses = train_loop(policy.parameters(), loss_fn, pc)
    policy.eval()
    return PolicyFit(policy=policy, plateau=summary, losses=losses)


# -- P-IQL, Preference Transformer + IQL, IPL ------------------------------------------------
def piql(
    pairs: SegmentPairs,
    episodes: Episodes,
    config: IQLConfig | None = None,
    policy_config: PolicyConfig | None = None,
    *,
    reward_model: AdvantageFit | None = None,
    advantage_config: AdvantageConfig | None = None,
    seed: int = 0,
    device=None,
) -> tuple[PolicyFit, dict]:
    """P-IQL with the package's own IQL: the per-step preference reward r_φ (PAWS's A_φ
    network when ``reward_model`` is given), every behaviour step relabelled, then IQL."""
    fit = reward_model or fit_advantage(pairs, advantage_config, seed=seed, device=device)
    reward = fit.model.per_step(episodes.obs, episodes.act)
    return iql_policy(episodes, reward, config, policy_config, seed=seed, device=device)


def pt_iql(
    pairs: SegmentPairs,
    episodes: Episodes,
    config: IQLConfig | None = None,
    policy_config: PolicyConfig | None = None,
    *,
    advantage_config: AdvantageConfig | None = None,
    seed: int = 0,
    device=None,
) -> tuple[PolicyFit, dict]:
    """Preference Transformer + IQL: PT trained by the preference BCE (same early stopping
    as A_φ), behaviour steps relabelled with r̂_t, then IQL."""
    torch.manual_seed(seed)
    model = PreferenceTransformer(
        pairs.obs_dim, pairs.act_dim, pairs.length, alignment=pairs.alignment
    )
    fit = fit_advantage(pairs, advantage_config, seed=seed, device=device, model=model)
    reward = relabel_episodes(fit.model, episodes)
    pol, info = iql_policy(episodes, reward, config, policy_config, seed=seed, device=device)
    info.update(pt_val_accuracy=fit.val_accuracy, pt_stopped_by=fit.stopped_by,
                pt_plateau=fit.plateau)  # fmt: skip
    return pol, info


@dataclass(frozen=True)
class IPLConfig:
    iql: IQLConfig = field(default_factory=IQLConfig)
    reward_reg: float = 0.5  # weight of the squared implied reward
    replay_weight: float = 0.5  # share of behaviour (unlabelled) steps in V and the regulariser
    batch_pairs: int = 16
    plateau_window: int = 100
    plateau_patience: int = 5
    plateau_min_delta: float = 0.01
    cap: int = 3000

    def __post_init__(self) -> None:
        if self.reward_reg < 0 or not 0 <= self.replay_weight <= 1:
            raise ValueError("need reward_reg ≥ 0 and replay_weight in [0, 1]")


def ipl(
    pairs: SegmentPairs,
    episodes: Episodes,
    config: IPLConfig | None = None,
    policy_config: PolicyConfig | None = None,
    *,
    seed: int = 0,
    device=None,
    on_step: Callable[[int, Critic], None] | None = None,
) -> tuple[PolicyFit, dict]:
    """IPL-IQL (module docstring). Each length-N preference segment gives N − 1
    transitions (its last step has no next observation inside the segment).
    ``on_step(step, critic)`` as in :func:`.iql.fit_iql`."""
    c = config or IPLConfig()
    q = c.iql
    dev = default_device(device)
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    po = torch.as_tensor(pairs.obs, device=dev)  # (n, 2, N, d)
    pa = torch.as_tensor(pairs.act, device=dev)
    y = torch.as_tensor(pairs.label, device=dev)
    ro, ra = (torch.as_tensor(x, device=dev) for x in episodes.steps())
    nxt = np.concatenate([episodes.obs[:, 1:], episodes.obs[:, -1:]], axis=1)
    rn = torch.as_tensor(nxt.reshape(-1, nxt.shape[-1]), device=dev)
    rterm = torch.zeros(episodes.obs.shape[:2], device=dev)
    rterm[:, -1] = 1.0
    rterm = rterm.reshape(-1)
    # behaviour steps the replay may draw: all, or (last_step "drop") all but each
    # episode's time-limit step, which then has no next observation and is no transition
    keep = torch.ones(episodes.obs.shape[:2], dtype=torch.bool)
    if q.last_step == "drop":
        keep[:, -1] = False
    replay = torch.nonzero(keep.reshape(-1)).squeeze(-1)
    critic = Critic(pairs.obs_dim, pairs.act_dim, q.hidden)
    if q.normalize_obs:  # the critic's training steps: behaviour and preference segments
        critic.obs_norm.fit(
            np.concatenate([episodes.steps()[0], pairs.obs.reshape(-1, pairs.obs_dim)]),
            q.obs_eps,
        )
    critic = critic.to(dev)
    joint = q.critic_update == "joint"  # one step on L_V + L_Q (IQLConfig.critic_update)
    if joint:
        opt = Adam(list(critic.q.parameters()) + list(critic.v.parameters()), lr=q.lr)
    else:
        q_opt = Adam(critic.q.parameters(), lr=q.lr)
        v_opt = Adam(critic.v.parameters(), lr=q.lr)
    actor = None
    if q.actor_update == "joint":  # the actor on the behaviour minibatch, step by step
        obs_all = episodes.steps()[0]
        actor = JointActor(obs_all, pairs.act_dim, q, actor_config(q, policy_config),
                           seed=seed, device=device)  # fmt: skip
    rule = Plateau(c.plateau_window, c.plateau_patience, c.plateau_min_delta, c.cap)
    n, length, d, a_dim = len(pairs), pairs.length, pairs.obs_dim, pairs.act_dim
    w = c.replay_weight
    while not rule.stopped:
        b = torch.randint(0, n, (c.batch_pairs,), generator=gen).to(dev)
        seg_o, seg_a = po[b], pa[b]  # (B, 2, N, ·)
        fo = seg_o[:, :, :-1].reshape(-1, d)
        fa = seg_a[:, :, :-1].reshape(-1, a_dim)
        fn = seg_o[:, :, 1:].reshape(-1, d)
        if q.last_step == "drop":
            r_idx = replay[torch.randint(0, replay.shape[0], (q.batch_size,), generator=gen)]
            r_idx = r_idx.to(dev)
        else:  # 0.6.0's draw (bit-identical)
            r_idx = torch.randint(0, ro.shape[0], (q.batch_size,), generator=gen).to(dev)
        o_r, a_r, n_r, t_r = ro[r_idx], ra[r_idx], rn[r_idx], rterm[r_idx]
        # V: expectile regression on the target critic, preference and behaviour steps
        with torch.no_grad():
            qf = critic.qs(fo, fa, target=True).min(dim=0).values
            qr = critic.qs(o_r, a_r, target=True).min(dim=0).values
        v_loss = (1 - w) * expectile_loss(qf - critic.value(fo), q.expectile) + (
            w * expectile_loss(qr - critic.value(o_r), q.expectile)
        )
        if not joint:
            v_opt.zero_grad()
            v_loss.backward()
            v_opt.step()
        # Q: the inverse Bellman operator's implied reward fitted to the preferences
        with torch.no_grad():  # joint: V before the step
            vf_next = critic.value(fn)
            vr_next = (1 - t_r) * critic.value(n_r)
        rf = critic.qs(fo, fa) - q.discount * vf_next  # (2, B·2·(N−1))
        rr = critic.qs(o_r, a_r) - q.discount * vr_next
        seg = rf.reshape(2, -1, 2, length - 1).sum(dim=-1)  # (ensemble, B, pair member)
        logits = seg[:, :, 0] - seg[:, :, 1]
        pref = F.binary_cross_entropy_with_logits(logits, y[b].expand_as(logits))
        reg = (1 - w) * rf.square().mean() + w * rr.square().mean()
        loss = pref + c.reward_reg * reg
        if joint:
            opt.zero_grad()
            (v_loss + loss).backward()
            opt.step()
        else:
            q_opt.zero_grad()
            loss.backward()
            q_opt.step()
        if actor is not None:
            actor.step(o_r, a_r, critic)
        critic.update_target(q.polyak)
        rule.update(float(loss.detach()))
        if on_step is not None:
            on_step(rule.steps, critic)
    critic.eval()
    obs, act = episodes.steps()
    weights = advantage_weights(critic, obs, act, q)
    if actor is not None:
        pol = actor.result(rule.summary())
    else:
        pol = fit_weighted_mle(obs, act, weights, actor_config(q, policy_config), seed=seed,
                               device=device)  # fmt: skip
    return pol, {"critic_plateau": rule.summary(),
                 "clipped_share": float(np.mean(weights >= q.max_weight))}  # fmt: skip
