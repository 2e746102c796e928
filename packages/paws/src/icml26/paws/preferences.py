"""Segment-preference datasets: pairs of fixed-length segments with a label.

A :class:`SegmentPairs` holds ``n`` pairs of segments cut from behaviour episodes:
observations ``obs`` (n, 2, N, obs_dim), actions ``act`` (n, 2, N, act_dim), the
episode and start index of each member, the label ``label[i] = P[first ≻ second]``
(1, 0, or 0.5 for a tie) and the teacher that gave it. The learner never sees rewards:
a reward field is not part of the type. Files are ``.npz`` written with plain arrays and
read with ``allow_pickle=False``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["SegmentPairs", "oracle_labels"]


def oracle_labels(return_first: np.ndarray, return_second: np.ndarray) -> np.ndarray:
    """The scripted teacher: 1 where the first segment's true return is higher, 0 where it
    is lower, 0.5 on a tie (a soft label, as jhejna/cpl's feedback buffer)."""
    a = np.asarray(return_first, dtype=float)
    b = np.asarray(return_second, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"return arrays differ in shape: {a.shape} vs {b.shape}")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("segment returns must be finite to label a pair")
    return np.where(a > b, 1.0, np.where(a < b, 0.0, 0.5)).astype(np.float32)


def _finite(name: str, x: np.ndarray) -> None:
    if not np.all(np.isfinite(x)):
        bad = int(np.size(x) - np.count_nonzero(np.isfinite(x)))
        raise ValueError(f"{name} contains {bad} non-finite value(s) (NaN or inf)")


@dataclass(frozen=True)
class SegmentPairs:
    """``n`` labelled pairs of length-``N`` segments (see the module docstring).

    ``alignment`` is the cut grid the segments were taken on (starts ≡ 0 mod
    ``alignment``), or ``None`` when the starts are arbitrary; the advantage model's guard
    compares it with the segments it is later queried on.
    """

    obs: np.ndarray
    act: np.ndarray
    label: np.ndarray
    start: np.ndarray
    episode: np.ndarray
    teacher: str = "oracle"
    alignment: int | None = None

    def __post_init__(self) -> None:
        obs = np.asarray(self.obs, dtype=np.float32)
        act = np.asarray(self.act, dtype=np.float32)
        if obs.ndim != 4 or obs.shape[1] != 2:
            raise ValueError(f"obs must have shape (n, 2, N, obs_dim), got {obs.shape}")
        if act.ndim != 4 or act.shape[1] != 2:
            raise ValueError(f"act must have shape (n, 2, N, act_dim), got {act.shape}")
        n, _, length, _ = obs.shape
        if n == 0:
            raise ValueError("the preference set is empty (n = 0 pairs)")
        if length < 2:
            raise ValueError(f"segments need at least 2 steps, got N = {length}")
        if act.shape[:3] != obs.shape[:3]:
            raise ValueError(f"obs {obs.shape} and act {act.shape} disagree on (n, 2, N)")
        _finite("obs", obs)
        _finite("act", act)
        label = np.asarray(self.label, dtype=np.float32).reshape(-1)
        if label.shape != (n,):
            raise ValueError(f"label must have {n} entries, got {label.shape}")
        if not np.all((label >= 0) & (label <= 1)):
            raise ValueError("labels are probabilities P[first ≻ second] in [0, 1]")
        start = np.asarray(self.start, dtype=np.int64)
        episode = np.asarray(self.episode, dtype=np.int64)
        for name, arr in (("start", start), ("episode", episode)):
            if arr.shape != (n, 2):
                raise ValueError(f"{name} must have shape ({n}, 2), got {arr.shape}")
        if np.any(start < 0):
            raise ValueError("segment starts must be non-negative")
        if not isinstance(self.teacher, str):
            raise TypeError(f"teacher must be a str, got {type(self.teacher).__name__}")
        if self.alignment is not None and (
            isinstance(self.alignment, bool) or int(self.alignment) < 1
        ):
            raise ValueError(f"alignment must be a positive int or None, got {self.alignment}")
        for name, value in (
            ("obs", obs), ("act", act), ("label", label), ("start", start), ("episode", episode),
        ):  # fmt: skip
            object.__setattr__(self, name, value)

    # -- views ----------------------------------------------------------------------
    def __len__(self) -> int:
        return int(self.obs.shape[0])

    @property
    def length(self) -> int:
        """The segment length N."""
        return int(self.obs.shape[2])

    @property
    def obs_dim(self) -> int:
        return int(self.obs.shape[3])

    @property
    def act_dim(self) -> int:
        return int(self.act.shape[3])

    def subset(self, index: np.ndarray) -> SegmentPairs:
        idx = np.asarray(index)
        return SegmentPairs(
            obs=self.obs[idx], act=self.act[idx], label=self.label[idx], start=self.start[idx],
            episode=self.episode[idx], teacher=self.teacher, alignment=self.alignment,
        )  # fmt: skip

    def segments(self) -> tuple[np.ndarray, np.ndarray]:
        """Both members of every pair as (2n, N, ·) arrays: first members, then second."""
        obs = np.concatenate([self.obs[:, 0], self.obs[:, 1]])
        act = np.concatenate([self.act[:, 0], self.act[:, 1]])
        return obs, act

    def preferred(self) -> tuple[np.ndarray, np.ndarray]:
        """The preferred member of every non-tied pair (filtered BC's data)."""
        keep = self.label != 0.5
        side = (self.label[keep] < 0.5).astype(int)
        rows = np.flatnonzero(keep)
        return self.obs[rows, side], self.act[rows, side]

    # -- files ----------------------------------------------------------------------
    def save(self, path: str | Path) -> Path:
        """Write an ``.npz`` of plain arrays (no object arrays, loadable without pickle)."""
        path = Path(path)
        np.savez_compressed(
            path, obs=self.obs, act=self.act, label=self.label, start=self.start,
            episode=self.episode, teacher=np.array(self.teacher),
            alignment=np.array(-1 if self.alignment is None else int(self.alignment)),
        )  # fmt: skip
        return path if path.suffix == ".npz" else path.with_suffix(path.suffix + ".npz")

    @classmethod
    def load(cls, path: str | Path) -> SegmentPairs:
        """Read a file written by :meth:`save`; a file that needs pickle is refused."""
        data = _load_npz(path)
        missing = {"obs", "act", "label", "start", "episode"} - set(data)
        if missing:
            raise ValueError(f"{path} lacks the field(s) {sorted(missing)}")
        align = int(data["alignment"]) if "alignment" in data else -1
        return cls(
            obs=data["obs"], act=data["act"], label=data["label"], start=data["start"],
            episode=data["episode"], teacher=str(data.get("teacher", "unknown")),
            alignment=None if align < 0 else align,
        )  # fmt: skip


def _load_npz(path: str | Path) -> dict[str, np.ndarray]:
    """All arrays of an ``.npz`` with ``allow_pickle=False``, as a dict."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no preference file at {path}")
    try:
        with np.load(path, allow_pickle=False) as npz:
            return {k: npz[k] for k in npz.files}
    except ValueError as err:
        if "allow_pickle" in str(err) or "pickle" in str(err).lower():
            raise ValueError(
                f"{path} holds object arrays that need pickle to load; only plain numeric "
                "arrays are accepted (nothing is unpickled)"
            ) from err
        raise ValueError(f"{path} is not a readable .npz file: {err}") from err
    except OSError as err:
        raise ValueError(f"{path} is not a readable .npz file: {err}") from err
