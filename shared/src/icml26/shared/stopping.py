"""When to stop training: a plateau of a training loss, with patience and a cap.

The house rule is that every trained model stops by a convergence rule measured on
training data, never by a step count tuned on evaluation seeds. :class:`Plateau` is
that rule: the monitored loss is averaged over consecutive windows of ``window``
values (one epoch, or ``window`` minibatches, because one minibatch's loss is noisy);
a window *improves* when its mean is below the best window so far by more than
``min_delta`` times the best's magnitude. Training stops after ``patience`` windows in
a row without improvement (reason ``"plateau"``), or at ``cap`` values (``"cap"``).
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
        """Record one loss value; True once training should stop.

        A non-finite loss raises :class:`FloatingPointError` naming the step, so a
        diverged run is reported rather than trained on silently.
        """
        if self.stopped:
            return True
        value = float(value)
        if not math.isfinite(value):
            raise FloatingPointError(f"the training loss became {value} at step {self.steps}")
        self.steps += 1
        self._acc += value
        self._count += 1
        if self._count == self.window:
            mean = self._acc / self._count
            self.windows.append(mean)
            self._acc, self._count = 0.0, 0
            # relative to the best's magnitude, so that negative losses (ELBOs, log-dets) work
            if not math.isfinite(self.best) or mean < self.best - self.min_delta * abs(self.best):
                self.best, self.stale = mean, 0
            else:
                self.stale += 1
            if self.stale >= self.patience:
                self.reason = "plateau"
        if self.reason is None and self.steps >= self.cap:
            self.reason = "cap"
        return self.stopped

    def summary(self) -> dict:
        """Steps taken, why training stopped, and the best window's mean loss."""
        return {"steps": self.steps, "reason": self.reason, "best_window_loss": self.best}
