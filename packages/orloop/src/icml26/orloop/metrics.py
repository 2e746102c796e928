"""Episode metrics of ORLoopBench (official ``src/evaluation/metrics.py``).

- **RR@k**: share of episodes that reach OPTIMAL within ``k`` steps, counting the
  steps to the *first* OPTIMAL (not to the final SUBMIT).
- **DA_blind**: DA of what was blamed before any IIS was shown (``reveal_iis=False``).
- **DA** (diagnostic recall) ``= |diagnosed ∩ IIS| / |IIS|``, summed over episodes
  (micro average), and diagnostic precision ``|diagnosed ∩ IIS| / |diagnosed|``.
  IISs are not unique; every episode carries the IISs that count as correct and is
  scored against the one that matches the diagnosis best.
- **OP** (optimality preservation) ``= max(0, 1 − |z_rec − z_orig| / |z_orig|)`` on
  successful episodes (``z_orig = 0`` is guarded: OP is 1 only for ``z_rec = 0``).
- **FP** (feasibility / constraint preservation) ``= |remaining ∩ original| / |original|``
  over the rows of the intended model, on successful episodes.
- **Semantic drift**: a successful episode whose model solves a materially different
  problem — the objective moved by more than ``objective_tol`` (relative) or more
  than ``constraint_tol`` of the original rows are gone. This is how whole-model
  regeneration shows "feasible but wrong".
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np


@dataclass
class EpisodeResult:
    """What one agent did on one instance."""

    problem_id: str
    agent: str
    success: bool
    final_status: str
    steps: int
    success_at_step: int | None
    objective: float | None
    original_objective: float | None
    remaining_constraints: list[str]
    original_constraints: list[str]
    diagnosed: list[str]
    iis_sets: list[list[str]]
    total_reward: float = 0.0
    error_type: str = ""
    difficulty: str = ""
    family: str = ""
    actions: list[dict[str, Any]] = field(default_factory=list)
    # names blamed before the agent had seen any IIS (``RepairEnv(reveal_iis=False)``)
    diagnosed_blind: list[str] = field(default_factory=list)

    @property
    def op(self) -> float | None:
        if not self.success or self.objective is None or self.original_objective is None:
            return None
        return optimality_preservation(self.objective, self.original_objective)

    @property
    def fp(self) -> float | None:
        if not self.success:
            return None
        return feasibility_preservation(self.remaining_constraints, self.original_constraints)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["op"], out["fp"] = self.op, self.fp
        out["drift"] = semantic_drift(self)
        return out


def optimality_preservation(recovered: float, original: float, *, zero_tol: float = 1e-9) -> float:
    """``max(0, 1 − |z_rec − z_orig| / |z_orig|)``, guarded at ``z_orig = 0``."""
    if not (math.isfinite(recovered) and math.isfinite(original)):
        raise ValueError(f"objectives must be finite, got {recovered} and {original}")
    if abs(original) <= zero_tol:
        return 1.0 if abs(recovered - original) <= zero_tol else 0.0
    return max(0.0, 1.0 - abs(recovered - original) / abs(original))


def feasibility_preservation(remaining: Iterable[str], original: Iterable[str]) -> float:
    """Share of the original rows still in the model."""
    orig = set(original)
    if not orig:
        raise ValueError("the original model has no rows to preserve")
    return len(set(remaining) & orig) / len(orig)


def diagnostic_scores(
    diagnosed: Iterable[str], iis_sets: Sequence[Iterable[str]]
) -> tuple[int, int, int]:
    """``(hits, |IIS|, |diagnosed|)`` against the IIS that the diagnosis matches best."""
    diag = set(diagnosed)
    best: tuple[float, float, int, int] | None = None
    for iis in iis_sets:
        s = set(iis)
        if not s:
            continue
        hits = len(diag & s)
        key = (hits / len(s), hits / len(diag) if diag else 0.0, hits, len(s))
        if best is None or key[:2] > best[:2]:
            best = key
    if best is None:
        return 0, 0, len(diag)
    return best[2], best[3], len(diag)


def diagnostic_accuracy(
    results: Sequence[EpisodeResult], *, blind: bool = False
) -> tuple[float | None, float | None]:
    """Micro-averaged ``(recall, precision)`` of the diagnoses over episodes.

    ``blind=True`` scores only what was blamed before any IIS was shown (DA without
    the IIS revealed): copying the solver's IIS earns nothing there.
    """
    hits = total = said = said_hits = 0
    for r in results:
        h, n, d = diagnostic_scores(r.diagnosed_blind if blind else r.diagnosed, r.iis_sets)
        if n == 0:
            continue
        hits += h
        total += n
        if d:
            said += d
            said_hits += h
    recall = hits / total if total else None
    precision = said_hits / said if said else None
    return recall, precision


def rr_at_k(results: Sequence[EpisodeResult], k: int) -> float:
    """Share of episodes whose first OPTIMAL came within ``k`` steps."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if not results:
        raise ValueError("rr_at_k needs at least one episode")
    return sum(
        1 for r in results if r.success_at_step is not None and r.success_at_step <= k
    ) / len(results)


def semantic_drift(
    result: EpisodeResult, *, objective_tol: float = 0.05, constraint_tol: float = 0.1
) -> bool | None:
    """True when a successful repair solves a materially different problem; None if it failed."""
    op, fp = result.op, result.fp
    if op is None or fp is None:
        return None
    return op < 1.0 - objective_tol or fp < 1.0 - constraint_tol


def summarize(
    results: Sequence[EpisodeResult], *, ks: Sequence[int] = (1, 5, 10)
) -> dict[str, float]:
    """RR, RR@k, DA, DP, OP, FP, drift rate, mean steps and reward of a set of episodes."""
    if not results:
        raise ValueError("summarize needs at least one episode")
    out: dict[str, float] = {"n": float(len(results))}
    out["RR"] = float(np.mean([r.success for r in results]))
    for k in ks:
        out[f"RR@{k}"] = rr_at_k(results, k)
    da, dp = diagnostic_accuracy(results)
    out["DA"] = float("nan") if da is None else da
    out["DP"] = float("nan") if dp is None else dp
    da_b, dp_b = diagnostic_accuracy(results, blind=True)
    out["DA_blind"] = float("nan") if da_b is None else da_b
    out["DP_blind"] = float("nan") if dp_b is None else dp_b
    ops = [r.op for r in results if r.op is not None]
    fps = [r.fp for r in results if r.fp is not None]
    drifts = [d for r in results if (d := semantic_drift(r)) is not None]
    out["OP"] = float(np.mean(ops)) if ops else float("nan")
    out["FP"] = float(np.mean(fps)) if fps else float("nan")
    out["drift"] = float(np.mean(drifts)) if drifts else float("nan")
    out["steps"] = float(np.mean([r.steps for r in results]))
    out["reward"] = float(np.mean([r.total_reward for r in results]))
    return out
