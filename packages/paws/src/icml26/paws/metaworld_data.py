"""Meta-World V3 offline data from the shipped scripted experts (extra ``metaworld``).

**Locally generated, not the paper's data.** The paper's Meta-World preference data are
not available offline; these episodes come from ``metaworld``'s V3 scripted policies
(``metaworld.policies.ENV_POLICY_MAP``) in ``gymnasium.make("Meta-World/MT1", ...)``:

- behaviours: the expert; the expert with Gaussian action noise σ ∈ {0.3, 1.0}; and
  ε-random (each step a uniform random action with probability ε, else the expert's);
- fixed-horizon episodes (no termination at success, so every episode cuts into the same
  segment grid); the dense V3 reward is kept for oracle labels and never shown to a
  learner; the per-step success flag is kept for evaluation statistics.

The cache format is one ``.npz`` (read with ``allow_pickle=False``): ``obs`` (E, H, 39),
``act`` (E, H, 4), ``reward`` (E, H), ``success`` (E, H) booleans, ``kind`` (E,) behaviour
index, and the scalars ``task`` and ``horizon``. Preference pairs cut from it are ordinary
:class:`~icml26.paws.preferences.SegmentPairs` files.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from icml26.paws.data import Episodes
from icml26.paws.preferences import _load_npz

__all__ = [
    "METAWORLD_BEHAVIOURS",
    "MetaWorldEpisodes",
    "load_metaworld_episodes",
    "metaworld_episodes",
    "metaworld_success",
    "save_metaworld_episodes",
]

#: (name, Gaussian noise σ around the expert, probability of a uniform random action)
METAWORLD_BEHAVIOURS = (
    ("expert", 0.0, 0.0),
    ("noisy σ=0.3", 0.3, 0.0),
    ("noisy σ=1.0", 1.0, 0.0),
    ("ε-random ε=0.5", 0.0, 0.5),
)
_FIELDS = ("obs", "act", "reward", "success", "kind", "task", "horizon")


@dataclass(frozen=True)
class MetaWorldEpisodes:
    """Cached Meta-World episodes: the learner-facing :class:`Episodes` and the success
    flags (evaluation statistics only)."""

    episodes: Episodes
    success: np.ndarray  # (E, H) bool
    task: str

    @property
    def success_rate(self) -> float:
        """Share of episodes that succeeded at any step."""
        return float(np.mean(self.success.any(axis=1)))


def _require_metaworld():
    try:
        import gymnasium
        import metaworld  # noqa: F401  (registers the Meta-World/* environments)
        from metaworld.policies import ENV_POLICY_MAP
    except ImportError as err:  # pragma: no cover - depends on the extra
        raise ImportError(
            "Meta-World data need the extra: pip install 'icml26-paws[metaworld]'"
        ) from err
    return gymnasium, ENV_POLICY_MAP


def _make(task: str, seed: int):
    gym, policies = _require_metaworld()
    if task not in policies:
        raise ValueError(f"unknown Meta-World V3 task {task!r}; e.g. {sorted(policies)[:4]}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env = gym.make("Meta-World/MT1", env_name=task, seed=seed, disable_env_checker=True)
    return env, policies[task]()


def metaworld_episodes(
    task: str,
    n_episodes: int,
    seed: int,
    *,
    horizon: int = 150,
    mix: tuple[float, ...] = (0.1, 0.3, 0.3, 0.3),
) -> MetaWorldEpisodes:
    """Roll out the behaviour mixture :data:`METAWORLD_BEHAVIOURS` (shares ``mix``)."""
    if n_episodes < 1 or horizon < 2:
        raise ValueError(f"need n_episodes ≥ 1 and horizon ≥ 2, got {n_episodes}, {horizon}")
    if len(mix) != len(METAWORLD_BEHAVIOURS) or min(mix) < 0 or not np.isclose(sum(mix), 1):
        raise ValueError(f"mix must be {len(METAWORLD_BEHAVIOURS)} shares summing to 1")
    rng = np.random.default_rng(seed)
    env, expert = _make(task, seed)
    kinds = rng.choice(len(METAWORLD_BEHAVIOURS), size=n_episodes, p=np.asarray(mix))
    obs_l, act_l, rew_l, suc_l = [], [], [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for e, kind in enumerate(kinds):
            _, sigma, eps = METAWORLD_BEHAVIOURS[kind]
            o, _ = env.reset(seed=int(seed * 100_003 + e))
            obs = np.zeros((horizon, o.shape[0]), np.float32)
            act = np.zeros((horizon, 4), np.float32)
            rew = np.zeros(horizon, np.float32)
            suc = np.zeros(horizon, bool)
            for t in range(horizon):
                a = np.asarray(expert.get_action(o), dtype=np.float64)
                if sigma:
                    a = a + sigma * rng.normal(size=a.shape)
                if eps and rng.random() < eps:
                    a = rng.uniform(-1.0, 1.0, size=a.shape)
                a = np.clip(a, -1.0, 1.0)
                obs[t], act[t] = o, a
                o, r, _, _, info = env.step(a)
                rew[t], suc[t] = r, bool(info.get("success", 0.0))
            obs_l.append(obs)
            act_l.append(act)
            rew_l.append(rew)
            suc_l.append(suc)
    env.close()
    episodes = Episodes(obs=np.stack(obs_l), act=np.stack(act_l), reward=np.stack(rew_l),
                        kind=kinds.astype(np.int64))  # fmt: skip
    return MetaWorldEpisodes(episodes=episodes, success=np.stack(suc_l), task=task)


def save_metaworld_episodes(data: MetaWorldEpisodes, path: str | Path) -> Path:
    """Write the cache ``.npz`` (module docstring)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    ep = data.episodes
    np.savez_compressed(
        path, obs=ep.obs, act=ep.act, reward=ep.reward, success=data.success, kind=ep.kind,
        task=np.str_(data.task), horizon=np.int64(ep.horizon),
    )  # fmt: skip
    return path


def load_metaworld_episodes(path: str | Path) -> MetaWorldEpisodes:
    """Read a cache written by :func:`save_metaworld_episodes` (``allow_pickle=False``)."""
    z = _load_npz(path)
    missing = [k for k in _FIELDS if k not in z]
    if missing:
        raise ValueError(f"{path}: not a Meta-World episode cache, missing {missing}")
    obs = np.asarray(z["obs"], np.float32)
    if obs.ndim != 3 or int(z["horizon"]) != obs.shape[1]:
        raise ValueError(f"{path}: obs must be (E, horizon, d), got {obs.shape}")
    success = np.asarray(z["success"], bool)
    if success.shape != obs.shape[:2]:
        raise ValueError(f"{path}: success must have shape {obs.shape[:2]}")
    for name in ("obs", "act", "reward"):
        if not np.all(np.isfinite(z[name])):
            raise ValueError(f"{path}: {name} contains NaN or inf")
    episodes = Episodes(obs=obs, act=np.asarray(z["act"], np.float32),
                        reward=np.asarray(z["reward"], np.float32),
                        kind=np.asarray(z["kind"], np.int64))  # fmt: skip
    return MetaWorldEpisodes(episodes=episodes, success=success, task=str(z["task"]))


def metaworld_success(
    act: Callable[[np.ndarray], np.ndarray],
    task: str,
    n_episodes: int,
    seed: int,
    *,
    horizon: int = 150,
) -> tuple[np.ndarray, list[str]]:
    """Evaluation rollouts (the only environment calls of a learner): 1.0 if the episode
    succeeds at any step, 0.0 if not, NaN (with its error) if the policy fails."""
    env, _ = _make(task, seed)
    out = np.full(n_episodes, np.nan)
    errors: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for e in range(n_episodes):
            try:
                o, _ = env.reset(seed=int(10_000_019 + seed * 1000 + e))
                done = False
                for _ in range(horizon):
                    a = np.asarray(act(np.asarray(o, np.float32)[None]), dtype=float)[0]
                    if not np.all(np.isfinite(a)):
                        raise ValueError("the policy returned non-finite actions")
                    o, _, _, _, info = env.step(np.clip(a, -1.0, 1.0))
                    if info.get("success", 0.0):
                        done = True
                        break
                out[e] = float(done)
            except Exception as err:  # a policy error is data, not a crash
                errors.append(f"episode {e}: {type(err).__name__}: {err}")
    env.close()
    return out, errors
