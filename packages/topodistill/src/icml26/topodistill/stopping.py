"""When to stop training: a plateau of a training-block loss, with patience and a cap.

Every network of the package (the teacher and each student) stops by this rule, measured
on the training block only, never by a step count tuned on evaluation data. The monitored
loss is averaged over consecutive windows of ``window`` values (one epoch of the teacher,
``window`` minibatches of a student), because one minibatch's KL is noisy; a window
*improves* when its mean is below ``(1 − min_delta)`` times the best window so far.
Training stops after ``patience`` windows in a row without improvement, or at the cap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = ["Plateau"]


@dataclass
class Plateau:
    """Relative-improvement plateau detector (``update`` per value, ``stopped`` when done).

    >>> rule = Plateau(window=2, patience=2, min_delta=0.1, cap=100)
    >>> [rule.update(v) for v in (4.0, 4.0, 2.0, 2.0, 1.95, 1.95, 1.9, 1.9)][-1]
    True
    >>> rule.reason, rule.steps
    ('plateau', 8)
    """

    window: int
    patience: int
    min_delta: float
    cap: int
    steps: int = 0
    best: float = math.inf
    stale: int = 0
    reason: str | None = None
    windows: list[float] = field(default_factory=list)
    _acc: float = 0.0
    _count: int = 0

    def __post_init__(self) -> None:
        for name in ("window", "patience", "cap"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if not 0 <= self.min_delta < 1:
            raise ValueError(f"min_delta must lie in [0, 1), got {self.min_delta}")

    @property
    def stopped(self) -> bool:
        return self.reason is not None

    def update(self, value: float) -> bool:
        """Record one loss value; True once training should stop."""
        if self.stopped:
            return True
        if not math.isfinite(value):
            raise FloatingPointError(f"the training loss became {value} at step {self.steps}")
        self.steps += 1
        self._acc += value
        self._count += 1
        if self._count == self.window:
            mean = self._acc / self._count
            self.windows.append(mean)
            self._acc, self._count = 0.0, 0
            if mean < self.best * (1.0 - self.min_delta) or not math.isfinite(self.best):
                self.best, self.stale = mean, 0
            else:
                self.stale += 1
            if self.stale >= self.patience:
                self.reason = "plateau"
        if self.reason is None and self.steps >= self.cap:
            self.reason = "cap"
        return self.stopped

    def summary(self) -> dict:
        return {"steps": self.steps, "reason": self.reason, "best_window_loss": self.best}
