"""Offline data: the credit-ambiguity point mass, behaviour episodes, segment pairs, and a
loader for jhejna/cpl's preference ``.npz`` files.

**The point mass (reconstructed from the brief's design, ours).** A 2-D point at ``p``
moves by ``step · clip(a, −1, 1)`` inside ``[−2, 2]²`` towards a goal at the origin;
the observation is ``(x, y, phase)`` with ``phase = (t mod N) / N`` for the reward period
``N`` (the segment length). The true reward makes per-step credit ambiguous from segment
sums:

- *goal progress arrives at segment end*: at the last step of every period the reward is
  ``progress_bonus · max(0, d(p_start) − d(p_end))`` (the clipped distance gained over the
  period) plus ``goal_bonus`` if the point ends the period within ``goal_radius``;
- *a shaping term of opposite sign in the first half*: every step with phase < 1/2 earns
  ``−shaping · (d(p_t) − d(p_{t+1}))``, so moving towards the goal is penalised step by
  step while it pays at the period's end.

A model that sums per-step utilities to match segment preferences can place the delayed
credit anywhere inside the segment; the segment sum stays right, the per-step values need
not. Behaviour data mix a noisy scripted expert (skilled), a very noisy expert and uniform
random actions (unskilled), so whole segments differ in quality. Rewards are kept apart
(:attr:`Episodes.reward`) and are used only to label pairs and to evaluate.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from icml26.paws.preferences import SegmentPairs, _load_npz, oracle_labels

__all__ = [
    "Episodes",
    "PointMass",
    "PointMassConfig",
    "behaviour_episodes",
    "cut_segments",
    "expert_action",
    "load_cpl_npz",
    "make_preferences",
    "save_cpl_npz",
]


@dataclass(frozen=True)
class PointMassConfig:
    """The point mass and its reward (see the module docstring)."""

    horizon: int = 100
    period: int = 20  # the reward period N; segments are cut on this grid
    step: float = 0.05
    start_radius: float = 1.5
    goal_radius: float = 0.15
    progress_bonus: float = 1.0
    goal_bonus: float = 1.0
    shaping: float = 1.0
    bound: float = 2.0

    def __post_init__(self) -> None:
        if self.horizon < 1 or self.period < 2:
            raise ValueError(f"need horizon ≥ 1 and period ≥ 2, got {self.horizon}, {self.period}")
        if self.step <= 0 or self.start_radius <= 0 or self.bound <= self.start_radius:
            raise ValueError("need step > 0 and 0 < start_radius < bound")


class PointMass:
    """A vectorised NumPy point mass (``reset`` then ``step`` on a batch of episodes)."""

    obs_dim = 3
    act_dim = 2

    def __init__(self, config: PointMassConfig | None = None):
        self.config = config or PointMassConfig()

    def starts(self, n: int, rng: np.random.Generator) -> np.ndarray:
        angle = rng.uniform(0.0, 2 * np.pi, size=n)
        return self.config.start_radius * np.stack([np.cos(angle), np.sin(angle)], axis=1)

    def observe(self, pos: np.ndarray, t: int) -> np.ndarray:
        phase = np.full((pos.shape[0], 1), (t % self.config.period) / self.config.period)
        return np.concatenate([pos, phase], axis=1).astype(np.float32)

    def step(
        self, pos: np.ndarray, seg_start: np.ndarray, action: np.ndarray, t: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Move every point by one step at time ``t``; returns the new positions and rewards.

        ``seg_start`` holds each point's position at the start of the current period.
        """
        c = self.config
        action = np.asarray(action, dtype=float)
        if action.shape != pos.shape:
            raise ValueError(f"actions must have shape {pos.shape}, got {action.shape}")
        if not np.all(np.isfinite(action)):
            raise ValueError("the policy returned non-finite actions")
        new = np.clip(pos + c.step * np.clip(action, -1.0, 1.0), -c.bound, c.bound)
        d0, d1 = np.linalg.norm(pos, axis=1), np.linalg.norm(new, axis=1)
        k = t % c.period
        reward = np.zeros(pos.shape[0])
        if k < c.period // 2:
            reward -= c.shaping * (d0 - d1)
        if k == c.period - 1:
            gained = np.linalg.norm(seg_start, axis=1) - d1
            reward += c.progress_bonus * np.maximum(gained, 0.0)
            reward += c.goal_bonus * (d1 < c.goal_radius)
        return new, reward

    def rollout(
        self,
        policy: Callable[[np.ndarray], np.ndarray],
        starts: np.ndarray,
    ) -> Episodes:
        """Run ``policy(obs (E, 3)) -> actions (E, 2)`` from the given start positions."""
        c = self.config
        pos = np.asarray(starts, dtype=float).copy()
        e = pos.shape[0]
        obs = np.zeros((e, c.horizon, self.obs_dim), np.float32)
        act = np.zeros((e, c.horizon, self.act_dim), np.float32)
        rew = np.zeros((e, c.horizon), np.float32)
        seg_start = pos.copy()
        for t in range(c.horizon):
            if t % c.period == 0:
                seg_start = pos.copy()
            o = self.observe(pos, t)
            a = np.clip(np.asarray(policy(o), dtype=float), -1.0, 1.0)
            pos, r = self.step(pos, seg_start, a, t)
            obs[:, t], act[:, t], rew[:, t] = o, a, r
        return Episodes(obs=obs, act=act, reward=rew, kind=np.zeros(e, np.int64))


def expert_action(obs: np.ndarray, step: float = 0.05) -> np.ndarray:
    """The scripted expert: head straight for the goal, slowing to land on it."""
    pos = np.asarray(obs)[:, :2]
    return np.clip(-pos / step, -1.0, 1.0)


@dataclass(frozen=True)
class Episodes:
    """Behaviour episodes: ``obs`` (E, H, d), ``act`` (E, H, a), the true ``reward`` (E, H)
    used only to label and evaluate, and each episode's behaviour ``kind`` index."""

    obs: np.ndarray
    act: np.ndarray
    reward: np.ndarray
    kind: np.ndarray

    def __post_init__(self) -> None:
        if self.obs.ndim != 3 or self.act.ndim != 3 or self.obs.shape[:2] != self.act.shape[:2]:
            raise ValueError(f"obs {self.obs.shape} and act {self.act.shape} must be (E, H, ·)")
        if self.reward.shape != self.obs.shape[:2]:
            raise ValueError(f"reward must have shape {self.obs.shape[:2]}")

    @property
    def n_episodes(self) -> int:
        return int(self.obs.shape[0])

    @property
    def horizon(self) -> int:
        return int(self.obs.shape[1])

    @property
    def returns(self) -> np.ndarray:
        return self.reward.sum(axis=1)

    def steps(self) -> tuple[np.ndarray, np.ndarray]:
        """Every (obs, act) step, flattened."""
        return self.obs.reshape(-1, self.obs.shape[-1]), self.act.reshape(-1, self.act.shape[-1])


#: behaviour mixture: (name, Gaussian action noise σ around the expert, or None = uniform)
BEHAVIOURS = (("expert σ=0.3", 0.3), ("noisy σ=1.0", 1.0), ("random", None))


def behaviour_episodes(
    env: PointMass,
    n_episodes: int,
    rng: np.random.Generator,
    mix: tuple[float, ...] = (0.2, 0.2, 0.6),
) -> Episodes:
    """The offline data: episodes from the mixture :data:`BEHAVIOURS` in proportions ``mix``."""
    if n_episodes < 1:
        raise ValueError(f"n_episodes must be ≥ 1, got {n_episodes}")
    if len(mix) != len(BEHAVIOURS) or min(mix) < 0 or not np.isclose(sum(mix), 1.0):
        raise ValueError(f"mix must be {len(BEHAVIOURS)} non-negative shares summing to 1")
    kinds = rng.choice(len(BEHAVIOURS), size=n_episodes, p=np.asarray(mix))
    noise = np.array([np.inf if s is None else s for _, s in BEHAVIOURS])[kinds][:, None]
    step = env.config.step

    def policy(obs: np.ndarray) -> np.ndarray:
        base = expert_action(obs, step)
        uniform = rng.uniform(-1.0, 1.0, size=base.shape)
        gauss = base + rng.normal(size=base.shape) * np.where(np.isfinite(noise), noise, 0.0)
        return np.where(np.isfinite(noise), gauss, uniform)

    ep = env.rollout(policy, env.starts(n_episodes, rng))
    return Episodes(obs=ep.obs, act=ep.act, reward=ep.reward, kind=kinds)


def cut_segments(
    episodes: Episodes,
    length: int,
    *,
    alignment: int | None = None,
    n: int | None = None,
    rng: np.random.Generator | None = None,
) -> dict[str, np.ndarray]:
    """Cut length-``length`` segments. With ``alignment`` (default: ``length``) every
    segment starting on that grid is returned; with ``alignment=None`` and ``n``, ``n``
    segments start at uniformly random offsets (the re-cut diagnostic's segments)."""
    h = episodes.horizon
    if isinstance(length, bool) or not isinstance(length, int | np.integer):
        raise TypeError(f"segment length must be an int, got {type(length).__name__}")
    if length < 2:
        raise ValueError(f"segment length must be ≥ 2, got {length}")
    if length > h:
        raise ValueError(f"segment length {length} is longer than the episode ({h} steps)")
    if n is None:
        grid = length if alignment is None else alignment
        starts = np.arange(0, h - length + 1, grid)
        ep = np.repeat(np.arange(episodes.n_episodes), starts.size)
        st = np.tile(starts, episodes.n_episodes)
    else:
        if rng is None:
            raise ValueError("random cuts need an rng")
        ep = rng.integers(0, episodes.n_episodes, size=n)
        st = rng.integers(0, h - length + 1, size=n)
    idx = st[:, None] + np.arange(length)[None, :]
    return {
        "obs": episodes.obs[ep[:, None], idx],
        "act": episodes.act[ep[:, None], idx],
        "ret": episodes.reward[ep[:, None], idx].sum(axis=1),
        "episode": ep,
        "start": st,
    }


def make_preferences(
    episodes: Episodes,
    n_pairs: int,
    length: int,
    rng: np.random.Generator,
    *,
    aligned: bool = True,
    teacher: str = "return",
    critic=None,
) -> SegmentPairs:
    """``n_pairs`` random pairs of segments labelled by a scripted teacher
    (:mod:`icml26.paws.teacher`): ``"return"``, the true segment return (default), or
    ``"regret"``, the oracle segment advantage under ``critic``
    (:func:`~icml26.paws.teacher.fit_oracle_critic` on the same episodes).

    ``aligned`` cuts on the reward-period grid (starts ≡ 0 mod ``length``), as the
    training segments of the advantage model; ``aligned=False`` cuts at random offsets.
    The pairs are the same for both teachers (the rng draws do not depend on it).
    """
    if n_pairs < 1:
        raise ValueError(f"the preference set is empty: n_pairs = {n_pairs}")
    if teacher not in ("return", "regret"):
        raise ValueError(f"teacher must be 'return' or 'regret', got {teacher!r}")
    if teacher == "regret" and critic is None:
        raise ValueError(
            "teacher='regret' needs the oracle critic: critic=fit_oracle_critic(episodes)"
        )
    if teacher == "return" and critic is not None:
        raise ValueError("critic is used by teacher='regret' only")
    if aligned:
        seg = cut_segments(episodes, length)
        m = seg["episode"].size
        first = rng.integers(0, m, size=n_pairs)
        second = (first + rng.integers(1, m, size=n_pairs)) % m
        idx = np.stack([first, second], axis=1)
    else:
        seg = cut_segments(episodes, length, alignment=None, n=2 * n_pairs, rng=rng)
        idx = np.arange(2 * n_pairs).reshape(n_pairs, 2)
    score = seg["ret"]
    if teacher == "regret":
        from icml26.paws.teacher import segment_regret  # teacher imports this module

        values = critic.values(episodes)
        score = segment_regret(episodes.reward, values, seg["episode"], seg["start"], length,
                               critic.gamma)  # fmt: skip
    return SegmentPairs(
        obs=seg["obs"][idx], act=seg["act"][idx],
        label=oracle_labels(score[idx[:, 0]], score[idx[:, 1]]),
        start=seg["start"][idx], episode=seg["episode"][idx],
        teacher="oracle" if teacher == "return" else "oracle-regret",
        alignment=length if aligned else None,
    )  # fmt: skip


# -- jhejna/cpl's preference files -------------------------------------------------------
def load_cpl_npz(path: str | Path, *, length: int | None = None) -> SegmentPairs:
    """Read a preference ``.npz`` in jhejna/cpl's layout (``allow_pickle=False``).

    - *paired* (the older layout): ``obs_1, obs_2, action_1, action_2`` (n, S, ·) and
      ``label`` (n,) with ``label = 1`` when the **second** segment is preferred;
    - *stacked*: ``obs, action`` (2n, S, ·) and a score ``label`` (2n,); segment ``i``
      is compared with ``i + n`` and the higher score is preferred (equal: 0.5).

    Rewards in the file are ignored (the learner never sees them). ``length`` trims the
    segments to their first ``length`` steps (CPL's data use S = 64).
    """
    data = _load_npz(path)
    if "action_1" in data:
        need = {"obs_1", "obs_2", "action_1", "action_2", "label"}
        if need - set(data):
            raise ValueError(f"paired CPL file {path} lacks {sorted(need - set(data))}")
        for key in ("obs", "action"):
            s1, s2 = data[f"{key}_1"].shape, data[f"{key}_2"].shape
            if s1 != s2:
                raise ValueError(f"pair members differ in length: {key} {s1} vs {s2}")
        obs = np.stack([data["obs_1"], data["obs_2"]], axis=1)
        act = np.stack([data["action_1"], data["action_2"]], axis=1)
        label = 1.0 - np.asarray(data["label"], dtype=np.float32).reshape(-1)
    elif "action" in data:
        need = {"obs", "action", "label"}
        if need - set(data):
            raise ValueError(f"stacked CPL file {path} lacks {sorted(need - set(data))}")
        size = data["action"].shape[0]
        if size % 2:
            raise ValueError(f"stacked CPL file {path} has an odd number of segments ({size})")
        half = size // 2
        score = np.asarray(data["label"], dtype=np.float64).reshape(-1)
        obs = np.stack([data["obs"][:half], data["obs"][half:]], axis=1)
        act = np.stack([data["action"][:half], data["action"][half:]], axis=1)
        label = oracle_labels(score[:half], score[half:])
    else:
        raise ValueError(
            f"{path} is in neither CPL layout (expected action_1/action_2 or action keys, "
            f"found {sorted(data)})"
        )
    if obs.ndim == 3:  # flat observations per step are not a segment layout
        raise ValueError(f"CPL segments must be (n, S, dim), got {obs.shape[1:]}")
    if length is not None:
        if length > obs.shape[2]:
            raise ValueError(f"segment length {length} exceeds the file's {obs.shape[2]}")
        obs, act = obs[:, :, :length], act[:, :, :length]
    n = obs.shape[0]
    lim = 1 - 1e-5  # as CPL's buffer: keep actions inside the tanh's open interval
    return SegmentPairs(
        obs=obs, act=np.clip(act, -lim, lim), label=label,
        start=np.zeros((n, 2), np.int64),
        episode=np.stack([np.arange(n), np.arange(n) + n], axis=1),
        teacher="cpl-file", alignment=None,
    )  # fmt: skip


def save_cpl_npz(pairs: SegmentPairs, path: str | Path, *, layout: str = "paired") -> Path:
    """Write ``pairs`` in one of CPL's two layouts (for fixtures and export)."""
    path = Path(path)
    if layout == "paired":
        np.savez(
            path, obs_1=pairs.obs[:, 0], obs_2=pairs.obs[:, 1], action_1=pairs.act[:, 0],
            action_2=pairs.act[:, 1], label=(1.0 - pairs.label).astype(np.float32),
            reward_1=np.zeros(pairs.obs.shape[:1] + pairs.obs.shape[2:3], np.float32),
            reward_2=np.zeros(pairs.obs.shape[:1] + pairs.obs.shape[2:3], np.float32),
        )  # fmt: skip
    elif layout == "stacked":
        score = np.concatenate([pairs.label, 1.0 - pairs.label]).astype(np.float32)
        np.savez(
            path, obs=np.concatenate([pairs.obs[:, 0], pairs.obs[:, 1]]),
            action=np.concatenate([pairs.act[:, 0], pairs.act[:, 1]]), label=score,
            reward=np.zeros((2 * len(pairs), pairs.length), np.float32),
        )  # fmt: skip
    else:
        raise ValueError(f"layout must be 'paired' or 'stacked', got {layout!r}")
    return path
