"""The policy π_θ and the segment advantage-weighted maximum likelihood projection.

PAWS's projection [read]: maximise L(θ) = Σ_τ Σ_{(s_t, a_t) ∈ τ} exp(A_φ(τ)/λ) log π_θ(a_t | s_t),
every step of a segment sharing its segment's weight. π_θ is a tanh-squashed Gaussian MLP
([inferred]); ``PolicyConfig(distribution="gaussian")`` selects IQL's actor instead
(:class:`GaussianPolicy`: a Gaussian around tanh μ(s) with a state-independent standard
deviation, as in Kostrikov et al.'s code and d3rlpy's ``IQL``), used by the IQL family's
policy extraction. The weighted sum is estimated on minibatches drawn with probability ∝ the
weight (an unbiased estimate of the same objective's gradient up to the constant Σ w,
with lower variance than uniform minibatches when a few segments carry most weight).
Training stops at a plateau of this training loss (``icml26.shared.Plateau``).
With ``PolicyConfig(normalize_obs=True)`` the policy z-scores its input with the mean and
standard deviation of its training observations (:class:`~icml26.paws.networks.ObsNorm`),
stored with it and applied at evaluation.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn

from icml26.paws.networks import Adam, ObsNorm, default_device, mlp
from icml26.shared import Plateau, is_main_process, rank

__all__ = [
    "DISTRIBUTIONS",
    "GaussianPolicy",
    "PolicyConfig",
    "PolicyFit",
    "TanhGaussianPolicy",
    "fit_weighted_mle",
    "load_policy",
    "save_policy",
    "train_loop",
]

ACTION_EPS = 1e-4
LOG_STD_MIN, LOG_STD_MAX = -5.0, 1.0


class TanhGaussianPolicy(nn.Module):
    """a = tanh(u), u ~ N(μ_θ(s), diag σ_θ(s)²)."""

    def __init__(self, obs_dim: int, act_dim: int, hidden: tuple[int, ...] = (64, 64)):
        super().__init__()
        self.obs_dim, self.act_dim = int(obs_dim), int(act_dim)
        self.net = mlp(obs_dim, 2 * act_dim, hidden)
        self.obs_norm = ObsNorm(obs_dim)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mu, log_std = self.net(self.obs_norm(obs)).chunk(2, dim=-1)
        return mu, log_std.clamp(LOG_STD_MIN, LOG_STD_MAX)

    def log_prob(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        """log π(a | s) summed over action dimensions (actions inside (−1, 1))."""
        a = act.clamp(-1 + ACTION_EPS, 1 - ACTION_EPS)
        u = torch.atanh(a)
        mu, log_std = self(obs)
        z = (u - mu) / log_std.exp()
        gauss = -0.5 * z.square() - log_std - 0.5 * math.log(2 * math.pi)
        return (gauss - torch.log1p(-a.square())).sum(dim=-1)

    @torch.no_grad()
    def act(self, obs: np.ndarray) -> np.ndarray:
        """The deterministic action tanh(μ_θ(s)) for a batch of observations."""
        dev = next(self.parameters()).device
        o = torch.as_tensor(np.asarray(obs, dtype=np.float32), device=dev)
        return torch.tanh(self(o)[0]).cpu().numpy()


class GaussianPolicy(TanhGaussianPolicy):
    """IQL's actor: a ~ N(tanh μ_θ(s), diag σ²), σ state-independent, log σ a parameter
    squashed into [−5, 2] by a sigmoid (d3rlpy 2.8's ``NormalPolicy`` with
    ``use_std_parameter=True``, the policy of its ``IQL``; Kostrikov et al.'s code clips a
    state-independent log σ to the same range). The likelihood is of the action itself, not
    of atanh(a): saturated actions (±1) carry no Jacobian term. Acts by tanh μ_θ(s)."""

    LOG_STD_MIN, LOG_STD_MAX = -5.0, 2.0

    def __init__(self, obs_dim: int, act_dim: int, hidden: tuple[int, ...] = (64, 64)):
        nn.Module.__init__(self)
        self.obs_dim, self.act_dim = int(obs_dim), int(act_dim)
        self.net = mlp(obs_dim, act_dim, hidden)
        self.log_std = nn.Parameter(torch.zeros(act_dim))
        self.obs_norm = ObsNorm(obs_dim)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mu = self.net(self.obs_norm(obs))
        span = self.LOG_STD_MAX - self.LOG_STD_MIN
        log_std = self.LOG_STD_MIN + span * torch.sigmoid(self.log_std)
        return mu, log_std.expand_as(mu)

    def log_prob(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        """log N(a; tanh μ_θ(s), σ²) summed over action dimensions."""
        mu, log_std = self(obs)
        z = (act - torch.tanh(mu)) / log_std.exp()
        return (-0.5 * z.square() - log_std - 0.5 * math.log(2 * math.pi)).sum(dim=-1)


DISTRIBUTIONS = {"tanh-gaussian": TanhGaussianPolicy, "gaussian": GaussianPolicy}
SAMPLINGS = ("weighted", "uniform")


@dataclass(frozen=True)
class PolicyConfig:
    hidden: tuple[int, ...] = (64, 64)
    lr: float = 1e-3
    batch_size: int = 256
    plateau_window: int = 50
    plateau_patience: int = 5
    plateau_min_delta: float = 0.01
    cap: int = 3000
    normalize_obs: bool = False  # z-score inputs with the training observations' statistics
    # "tanh-gaussian" (PAWS and the shared default) or "gaussian" (IQL's actor)
    distribution: str = "tanh-gaussian"
    # minibatches drawn ∝ weight ("weighted") or uniformly with the weight in the loss
    sampling: str = "weighted"
    obs_eps: float = 0.0  # > 0: z-score by std + obs_eps (d3rlpy's scaler: 1e-3); ObsNorm.fit

    def __post_init__(self) -> None:
        if self.distribution not in DISTRIBUTIONS:
            raise ValueError(
                f"distribution must be one of {sorted(DISTRIBUTIONS)}, got {self.distribution!r}"
            )
        if self.sampling not in SAMPLINGS:
            raise ValueError(f"sampling must be one of {SAMPLINGS}, got {self.sampling!r}")
        if not (math.isfinite(self.obs_eps) and self.obs_eps >= 0):
            raise ValueError(f"obs_eps must be finite and non-negative, got {self.obs_eps}")


@dataclass
class PolicyFit:
    policy: TanhGaussianPolicy
    plateau: dict
    losses: list[float] = field(default_factory=list)
    first_batch: list[int] = field(default_factory=list)  # step indices of the first minibatch


def _world() -> int:
    dist = torch.distributed
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def train_loop(
    params, loss_fn: Callable[[int], torch.Tensor], config: PolicyConfig, *, cap: int | None = None
) -> tuple[dict, list[float]]:
    """Adam (:class:`~icml26.paws.networks.Adam`, bit-identical to ``torch.optim.Adam``)
    on ``loss_fn(step)`` until the training loss plateaus (or the cap).

    Under a launcher (an initialised process group) this is data parallel: every rank
    draws its own minibatches, gradients are averaged by all-reduce, and the plateau rule
    sees the loss averaged over ranks, so all ranks stop at the same step with the same
    parameters.
    """
    params = list(params)
    world = _world()
    opt = Adam(params, lr=config.lr)
    rule = Plateau(
        config.plateau_window, config.plateau_patience, config.plateau_min_delta,
        cap or config.cap,
    )  # fmt: skip
    losses: list[float] = []
    step = 0
    while not rule.stopped:
        loss = loss_fn(step)
        opt.zero_grad()
        loss.backward()
        if world > 1:
            reduced = loss.detach().clone()
            for p in params:
                if p.grad is not None:
                    torch.distributed.all_reduce(p.grad)
                    p.grad /= world
            torch.distributed.all_reduce(reduced)
            reduced /= world
            value = float(reduced)
        else:
            value = float(loss.detach())
        opt.step()
        losses.append(value)
        rule.update(value)
        step += 1
    return rule.summary(), losses


def _check_steps(obs: np.ndarray, act: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    o = np.asarray(obs, dtype=np.float32)
    a = np.asarray(act, dtype=np.float32)
    if o.ndim != 2 or a.ndim != 2 or o.shape[0] != a.shape[0]:
        raise ValueError(f"need obs (T, d) and act (T, a) with equal T, got {o.shape}, {a.shape}")
    if o.shape[0] == 0:
        raise ValueError("no steps to train on")
    if not np.all(np.isfinite(a)):
        raise ValueError("actions contain NaN or inf")
    if not np.all(np.isfinite(o)):
        raise ValueError("observations contain NaN or inf")
    return o, a


def fit_weighted_mle(
    obs: np.ndarray,
    act: np.ndarray,
    weights: np.ndarray | None = None,
    config: PolicyConfig | None = None,
    *,
    seed: int = 0,
    device: str | torch.device | None = None,
) -> PolicyFit:
    """max_θ Σ_t w_t log π_θ(a_t | s_t) over steps ``obs`` (T, d), ``act`` (T, a);
    ``weights=None`` is behaviour cloning."""
    o, a = _check_steps(obs, act)
    c = config or PolicyConfig()
    dev = default_device(device)
    torch.manual_seed(seed)  # the same initial parameters on every rank
    gen = torch.Generator().manual_seed(seed + 7919 * rank())  # each rank its own batches
    policy = DISTRIBUTIONS[c.distribution](o.shape[1], a.shape[1], c.hidden)
    if c.normalize_obs:
        policy.obs_norm.fit(o, c.obs_eps)  # the training observations only
    policy = policy.to(dev)
    first: list[int] = []
    ot, at = torch.as_tensor(o, device=dev), torch.as_tensor(a, device=dev)
    if weights is None:
        p = torch.ones(o.shape[0])
    else:
        w = np.asarray(weights, dtype=np.float64).reshape(-1)
        if w.shape[0] != o.shape[0]:
            raise ValueError(f"need one weight per step ({o.shape[0]}), got {w.shape[0]}")
        if not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
            raise ValueError("weights must be finite, non-negative and not all zero")
        p = torch.as_tensor(w / w.sum(), dtype=torch.float64)
    wt = torch.as_tensor(p.numpy() * p.shape[0], dtype=torch.float32, device=dev)  # mean 1

    def loss_fn(step: int) -> torch.Tensor:
        if c.sampling == "uniform":
            idx = torch.randint(0, o.shape[0], (c.batch_size,), generator=gen)
        else:
            idx = torch.multinomial(p, c.batch_size, replacement=True, generator=gen)
        if step == 0:
            first.extend(int(i) for i in idx)
        idx = idx.to(dev)
        if c.sampling == "uniform":
            return -(wt[idx] * policy.log_prob(ot[idx], at[idx])).mean()
        return -policy.log_prob(ot[idx], at[idx]).mean()

    summary, losses = train_loop(policy.parameters(), loss_fn, c)
    policy.eval()
    return PolicyFit(policy=policy, plateau=summary, losses=losses, first_batch=first)


def save_policy(policy: TanhGaussianPolicy, directory: str | Path) -> Path | None:
    """Write ``model.safetensors`` and ``config.json`` (rank 0 only; others return None)."""
    if not is_main_process():
        return None
    from safetensors.torch import save_file

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().cpu().contiguous() for k, v in policy.state_dict().items()}
    save_file(state, str(out / "model.safetensors"))
    hidden = [m.out_features for m in policy.net if isinstance(m, nn.Linear)][:-1]
    kind = "gaussian" if isinstance(policy, GaussianPolicy) else "tanh-gaussian"
    cfg = {"obs_dim": policy.obs_dim, "act_dim": policy.act_dim, "hidden": hidden,
           "normalize_obs": policy.obs_norm.active, "distribution": kind}  # fmt: skip
    (out / "config.json").write_text(json.dumps(cfg))
    return out


def load_policy(directory: str | Path) -> TanhGaussianPolicy:
    """Read a policy written by :func:`save_policy` (safetensors: nothing unpickles)."""
    from safetensors.torch import load_file

    d = Path(directory)
    cfg = json.loads((d / "config.json").read_text())
    kind = cfg.get("distribution", "tanh-gaussian")  # files before 0.7.0: tanh-Gaussian
    if kind not in DISTRIBUTIONS:
        raise ValueError(f"unknown policy distribution {kind!r} in {d / 'config.json'}")
    policy = DISTRIBUTIONS[kind](cfg["obs_dim"], cfg["act_dim"], tuple(cfg["hidden"]))
    state = load_file(str(d / "model.safetensors"))
    if not cfg.get("normalize_obs", False):  # files of releases before the normaliser
        state.setdefault("obs_norm.mean", policy.obs_norm.mean)
        state.setdefault("obs_norm.std", policy.obs_norm.std)
    policy.load_state_dict(state)  # switches the normaliser on when statistics are loaded
    return policy.eval()
