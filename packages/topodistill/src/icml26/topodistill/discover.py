"""A causal graph for a multivariate series: CCM on every ordered pair of variables.

:func:`discover_graph` splits the series into a training block and an evaluation
block separated by a Theiler gap (brief, Method step 1), chooses each variable's τ
(first minimum of mutual information) and E (simplex scan) on the training block,
builds one shadow manifold per variable on the evaluation block — a delay embedding
(``method="ccm"``) or a distilled one (``method="topodistill"``, fitted on the
training block) — and tests every link ``i → j`` by cross-mapping ``x_i`` from
``M_j`` (:func:`~icml26.topodistill.significance.cross_map_significance`). All pairs
use the same rows, library sizes and subsamples.

:func:`score_graph` compares a graph with a known one (AUROC / AUPRC over the
off-diagonal links, scored by cross-map skill; FPR / TPR of the decisions).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from icml26.shared.metrics import auroc, average_precision
from icml26.shared.progress import progress
from icml26.shared.seeding import numpy_rng
from icml26.topodistill.ccm import library_sizes
from icml26.topodistill.distill import DistillConfig, TopoDistill
from icml26.topodistill.embedding import check_series, choose_E, choose_tau, delay_embed
from icml26.topodistill.significance import CausalTest, cross_map_significance

__all__ = [
    "METHODS",
    "CausalGraph",
    "Manifolds",
    "build_manifolds",
    "discover_graph",
    "score_graph",
]

log = logging.getLogger(__name__)

METHODS = ("ccm", "topodistill")


@dataclass(frozen=True)
class Manifolds:
    """One shadow manifold per variable on common evaluation rows.

    ``points[j]`` is (M, D_j); ``targets`` (M, d) holds every variable's observed
    value on those rows; ``times`` indexes the original series.
    """

    points: list[np.ndarray]
    targets: np.ndarray
    times: np.ndarray
    E: list[int]
    tau: list[int]
    theiler: int
    method: str
    model: TopoDistill | None = None


@dataclass(frozen=True)
class CausalGraph:
    """Every ordered pair's verdict. Matrices are (d, d) with ``[i, j]`` about i → j
    (cross-mapping x_i from M_j); the diagonal is NaN / False."""

    names: tuple[str, ...]
    skill: np.ndarray
    convergence: np.ndarray
    p_value: np.ndarray
    adjacency: np.ndarray
    method: str
    tests: dict[tuple[int, int], CausalTest] = field(default_factory=dict, repr=False)

    def edges(self) -> list[tuple[str, str]]:
        """The accepted links as (cause, effect) names."""
        causes, effects = np.nonzero(self.adjacency)
        return [(self.names[i], self.names[j]) for i, j in zip(causes, effects, strict=True)]


def _split(n: int, train_fraction: float, gap: int) -> tuple[slice, slice]:
    if not 0 < train_fraction < 1:
        raise ValueError(f"train_fraction must lie in (0, 1), got {train_fraction}")
    cut = round(n * train_fraction)
    return slice(0, cut), slice(min(n, cut + gap), n)


def build_manifolds(
    data: np.ndarray,
    *,
    method: str = "topodistill",
    train_fraction: float = 0.5,
    E: int | Sequence[int] | None = None,
    tau: int | Sequence[int] | None = None,
    theiler: int | None = None,
    max_E: int = 8,
    distill: DistillConfig | None = None,
    variables: Sequence[int] | None = None,
    first_time: int | None = None,
    seed: int = 0,
    device: torch.device | str | None = None,
) -> Manifolds:
    """Choose τ and E on the training block, then embed the evaluation block.

    Both methods use the same τ, E, Theiler window (default: the largest τ) and the
    same evaluation rows: those where every manifold of ``variables`` exists, from
    ``first_time`` on (an index of ``data``) when given — pass the first time of one
    method's manifolds to put the other on the same rows.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    data = np.asarray(data, dtype=float)
    if data.ndim != 2 or data.shape[1] < 2:
        raise ValueError(f"data must be (T, d) with d >= 2, got shape {data.shape}")
    d = data.shape[1]
    for i in range(d):
        check_series(data[:, i], f"channel {i}", min_length=50, varying=True)
    variables = list(range(d)) if variables is None else [int(v) for v in variables]
    cut = round(data.shape[0] * train_fraction)
    train = data[:cut]
    taus = _per_variable(tau, d, "tau") or [choose_tau(train[:, i]) for i in range(d)]
    window = theiler if theiler is not None else max(taus[v] for v in variables)
    dims = _per_variable(E, d, "E") or [
        choose_E(train[:, i], taus[i], max_E=max_E, exclusion_radius=window, device=device)[0]
        if i in variables
        else 1
        for i in range(d)
    ]
    _, block = _split(data.shape[0], train_fraction, window)
    evaluation = data[block]
    offset = block.start
    model = None
    if method == "topodistill":
        cfg = distill or DistillConfig()
        if cfg.theiler is None:
            from dataclasses import replace

            cfg = replace(cfg, theiler=window)
        model = TopoDistill(cfg, seed=seed, device=device)
        model.fit(train, lags=taus, dims=dims, variables=variables)
        spans = {v: model.span(v) for v in variables}
    else:
        spans = {v: (dims[v] - 1) * taus[v] for v in variables}
    start = max(spans.values())
    if first_time is not None:
        start = max(start, int(first_time) - offset)
    if evaluation.shape[0] - start < 20:
        raise ValueError(
            f"the evaluation block has {evaluation.shape[0]} points but the embeddings need "
            f"{start} of past; give a longer series or a smaller train_fraction / window"
        )
    points = []
    for v in variables:
        if model is not None:
            z, times = model.embed(evaluation[:, v], v)
        else:
            z, times = delay_embed(evaluation[:, v], dims[v], taus[v])
        points.append(z[times >= start])
    rows = np.arange(start, evaluation.shape[0])
    return Manifolds(
        points=points,
        targets=evaluation[rows][:, variables],
        times=rows + offset,
        E=[dims[v] for v in variables],
        tau=[taus[v] for v in variables],
        theiler=window,
        method=method,
        model=model,
    )


def _per_variable(value, d: int, name: str) -> list[int] | None:
    if value is None:
        return None
    out = [int(value)] * d if np.isscalar(value) else [int(v) for v in value]
    if len(out) != d or min(out) < 1:
        raise ValueError(f"{name} must be a positive int or {d} positive ints, got {value}")
    return out


def discover_graph(
    data: np.ndarray,
    *,
    names: Sequence[str] | None = None,
    method: str = "topodistill",
    manifolds: Manifolds | None = None,
    lib_sizes: Sequence[int] | None = None,
    samples: int = 20,
    surrogate: str = "random_phase",
    n_surrogates: int = 99,
    alpha: float = 0.05,
    seed: int = 0,
    device: torch.device | str | None = None,
    **manifold_options,
) -> CausalGraph:
    """Test every ordered pair of channels of ``data`` (T, d); see the module docstring.

    ``manifold_options`` go to :func:`build_manifolds` (``train_fraction``, ``E``,
    ``tau``, ``theiler``, ``distill``...); pass prebuilt ``manifolds`` to reuse them.
    """
    data = np.asarray(data, dtype=float)
    if manifolds is None:
        manifolds = build_manifolds(
            data, method=method, seed=seed, device=device, **manifold_options
        )
    d = len(manifolds.points)
    names = tuple(names) if names is not None else tuple(f"x{i}" for i in range(d))
    if len(names) != d:
        raise ValueError(f"{len(names)} names for {d} variables")
    m = manifolds.targets.shape[0]
    sizes = library_sizes(m) if lib_sizes is None else np.asarray(lib_sizes, dtype=int)
    skill = np.full((d, d), np.nan)
    conv = np.full((d, d), np.nan)
    pval = np.full((d, d), np.nan)
    adj = np.zeros((d, d), dtype=bool)
    tests = {}
    pairs = [(i, j) for j in range(d) for i in range(d) if i != j]
    for i, j in progress(pairs, desc=f"{manifolds.method} pairs", leave=False):
        test = cross_map_significance(
            manifolds.points[j],
            manifolds.targets[:, i],
            lib_sizes=sizes,
            samples=samples,
            exclusion_radius=manifolds.theiler,
            times=manifolds.times,
            surrogate=surrogate,
            n_surrogates=n_surrogates,
            alpha=alpha,
            rng=numpy_rng(seed, "pair", i, j),
            device=device,
            label=f"{names[j]}:{names[i]}",
            E=manifolds.E[j],
            tau=manifolds.tau[j],
        )
        tests[(i, j)] = test
        skill[i, j], conv[i, j], pval[i, j] = test.skill, test.curve.convergence, test.p_value
        adj[i, j] = test.causal
    return CausalGraph(names, skill, conv, pval, adj, manifolds.method, tests)


def score_graph(graph: CausalGraph, truth: np.ndarray) -> dict[str, float]:
    """AUROC and AUPRC of the skill scores, and FPR/TPR of the decisions, off the diagonal."""
    truth = np.asarray(truth, dtype=bool)
    d = len(graph.names)
    if truth.shape != (d, d):
        raise ValueError(f"truth must be ({d}, {d}), got {truth.shape}")
    off = ~np.eye(d, dtype=bool)
    y, s = truth[off].astype(int), np.nan_to_num(graph.skill[off], nan=-1.0)
    decided = graph.adjacency[off]
    out = {
        "fpr": float(decided[y == 0].mean()) if (y == 0).any() else float("nan"),
        "tpr": float(decided[y == 1].mean()) if (y == 1).any() else float("nan"),
    }
    if 0 < y.sum() < y.size:
        out["auroc"] = auroc(y, s)
        out["auprc"] = average_precision(y, s)
    return out
