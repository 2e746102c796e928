"""The scripted teachers that label segment pairs: true segment return, or the oracle
regret (segment advantage) of the paper's preference model.

The paper models preferences by regret (Knox et al.): P[τ¹ ≻ τ²] = σ(A(τ¹) − A(τ²)) with
A(τ) = Σ_t A(s_t, a_t). Its Meta-World data are most likely CPL's, labelled by an oracle
critic's advantage. With A(s, a) = r + γ V(s') − V(s) the segment sum telescopes:

    A(τ) = Σ_{k<N} γ^k r_{t+k} + γ^N V(s_{t+N}) − V(s_t)          (the "regret" teacher)

(the discounted form of Knox et al.'s partial-return-plus-value-difference regret).

**Reconstructed (ours): the oracle critic.** CPL's oracle is a SAC agent's critic trained
online on the true reward; here V is the behaviour mixture's value, regressed on the true
Monte Carlo discounted returns-to-go of the behaviour episodes by a small MLP (cheap, no
RL). Per-episode Monte Carlo values would make A(τ) zero for every segment (the sum
telescopes exactly along the episode), so V must average over the behaviours that reach
a state. The episodes have a fixed horizon H without terminals, so the return-to-go from
step t is truncated at H: V takes the time-to-go (H − t)/H as an extra input (a
finite-horizon value, V(·, H) = 0), otherwise late states would look worse than they are.
The learner never sees the rewards, V or the critic: only the labels.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import torch

from icml26.paws.data import Episodes
from icml26.paws.networks import Adam, mlp
from icml26.shared import Plateau

__all__ = [
    "TEACHERS",
    "OracleCritic",
    "OracleCriticConfig",
    "discounted_returns_to_go",
    "fit_oracle_critic",
    "segment_regret",
]

#: "return": true segment return (the issue's teacher); "regret": the oracle segment
#: advantage of the paper's preference model (reconstructed critic, module docstring)
TEACHERS = ("return", "regret")


@dataclass(frozen=True)
class OracleCriticConfig:
    """The oracle critic V(s, t) of the regret teacher (teacher side only)."""

    gamma: float = 0.99
    hidden: tuple[int, ...] = (128, 128)
    lr: float = 1e-3
    batch_size: int = 256
    plateau_window: int = 50
    plateau_patience: int = 5
    plateau_min_delta: float = 0.01
    cap: int = 5000

    def __post_init__(self) -> None:
        if not 0 < self.gamma <= 1:
            raise ValueError(f"gamma must lie in (0, 1], got {self.gamma}")
        if self.batch_size < 1 or self.cap < 1 or self.lr <= 0:
            raise ValueError("batch_size, cap and lr must be positive")


def discounted_returns_to_go(reward: np.ndarray, gamma: float) -> np.ndarray:
    """G_t = Σ_{k ≥ t} γ^{k−t} r_k within each episode (rows of ``reward`` (E, H)),
    truncated at the horizon; returns (E, H + 1) with G_H = 0."""
    r = np.asarray(reward, dtype=np.float64)
    if r.ndim != 2:
        raise ValueError(f"reward must be (episodes, horizon), got {r.shape}")
    g = np.zeros((r.shape[0], r.shape[1] + 1))
    for t in range(r.shape[1] - 1, -1, -1):
        g[:, t] = r[:, t] + gamma * g[:, t + 1]
    return g


@dataclass
class OracleCritic:
    """A fitted V(s, t): ``values(episodes)`` gives V at every step plus V(·, H) = 0."""

    net: torch.nn.Module
    obs_mean: np.ndarray
    obs_std: np.ndarray
    target_mean: float
    target_std: float
    horizon: int
    gamma: float
    r2: float  # share of the returns-to-go's variance V explains (training data)
    steps: int
    stopped_by: str

    def _inputs(self, obs: np.ndarray, t: np.ndarray) -> torch.Tensor:
        z = (np.asarray(obs, np.float64) - self.obs_mean) / self.obs_std
        togo = (self.horizon - np.asarray(t, np.float64)) / self.horizon
        return torch.as_tensor(np.concatenate([z, togo[..., None]], axis=-1), dtype=torch.float32)

    @torch.no_grad()
    def values(self, episodes: Episodes) -> np.ndarray:
        """V(s_t, t) for every step of ``episodes`` (E, H + 1); column H is 0 (no return
        is left after the horizon)."""
        if episodes.horizon != self.horizon:
            raise ValueError(
                f"the critic was fitted on horizon {self.horizon}, got {episodes.horizon}"
            )
        e, h = episodes.obs.shape[:2]
        t = np.broadcast_to(np.arange(h), (e, h))
        x = self._inputs(episodes.obs, t)
        dev = next(self.net.parameters()).device
        v = self.net(x.to(dev)).squeeze(-1).double().cpu().numpy()
        out = np.zeros((e, h + 1))
        out[:, :h] = v * self.target_std + self.target_mean
        return out


def fit_oracle_critic(
    episodes: Episodes, config: OracleCriticConfig | None = None, *, seed: int = 0,
    device: str | torch.device | None = "cpu",
) -> OracleCritic:  # fmt: skip
    """Regress V(s_t, t) on the true discounted returns-to-go of ``episodes`` (squared
    error, z-scored inputs and targets, Adam, stopped by a training-loss plateau)."""
    c = config or OracleCriticConfig()
    if not isinstance(episodes, Episodes):
        raise TypeError(f"episodes must be Episodes, got {type(episodes).__name__}")
    if not np.all(np.isfinite(episodes.reward)) or not np.all(np.isfinite(episodes.obs)):
        raise ValueError("the oracle critic needs finite observations and rewards")
    e, h, d = episodes.obs.shape
    g = discounted_returns_to_go(episodes.reward, c.gamma)[:, :h]
    obs = episodes.obs.reshape(-1, d).astype(np.float64)
    mean, std = obs.mean(axis=0), obs.std(axis=0)
    std = np.where(std < 1e-6, 1.0, std)
    t_mean, t_std = float(g.mean()), float(g.std()) or 1.0
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    net = mlp(d + 1, 1, c.hidden).to(device)
    critic = OracleCritic(net, mean, std, t_mean, t_std, h, c.gamma, float("nan"), 0, "")
    x = critic._inputs(episodes.obs, np.broadcast_to(np.arange(h), (e, h))).reshape(-1, d + 1)
    y = torch.as_tensor(((g - t_mean) / t_std).reshape(-1), dtype=torch.float32)
    x, y = x.to(device), y.to(device)
    opt = Adam(net.parameters(), lr=c.lr)
    rule = Plateau(c.plateau_window, c.plateau_patience, c.plateau_min_delta, c.cap)
    while not rule.stopped:
        idx = torch.randint(0, x.shape[0], (c.batch_size,), generator=gen).to(device)
        loss = torch.mean((net(x[idx]).squeeze(-1) - y[idx]) ** 2)
        opt.zero_grad()
        loss.backward()
        opt.step()
        rule.update(loss.item())
    with torch.no_grad():
        mse = float(torch.mean((net(x).squeeze(-1) - y) ** 2))
    critic.net = copy.deepcopy(net).eval()
    critic.r2, critic.steps, critic.stopped_by = 1.0 - mse, rule.steps, str(rule.reason)
    return critic


def segment_regret(
    reward: np.ndarray, values: np.ndarray, episode: np.ndarray, start: np.ndarray, length: int,
    gamma: float,
) -> np.ndarray:  # fmt: skip
    """The oracle segment advantage Σ_{k<N} γ^k r_{t+k} + γ^N V(s_{t+N}) − V(s_t) of the
    segments (``episode``, ``start``) of length N; ``values`` is (E, H + 1)."""
    r = np.asarray(reward, np.float64)
    v = np.asarray(values, np.float64)
    if v.shape != (r.shape[0], r.shape[1] + 1):
        raise ValueError(f"values must be (E, H + 1) = {(r.shape[0], r.shape[1] + 1)}, "
                         f"got {v.shape}")  # fmt: skip
    ep, st = np.asarray(episode), np.asarray(start)
    if np.any(st + length > r.shape[1]) or np.any(st < 0):
        raise ValueError(f"segments of length {length} must lie inside the {r.shape[1]} steps")
    idx = st[..., None] + np.arange(length)
    disc = gamma ** np.arange(length)
    partial = (r[ep[..., None], idx] * disc).sum(axis=-1)
    return partial + gamma**length * v[ep, st + length] - v[ep, st]
