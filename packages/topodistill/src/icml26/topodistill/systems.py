"""Reference dynamical systems with a known causal graph, and observation noise.

Every simulator returns a :class:`System`: the observed series (T, d), the channel
names and the ground-truth adjacency ``graph[i, j] = True`` when variable ``i``
drives variable ``j`` (i → j). Initial conditions are drawn from the ``rng`` passed
in, so the same generator gives the same trajectory. Flows are integrated with a
fixed-step classical Runge–Kutta scheme (RK4), vectorised over the state.

- :func:`coupled_logistic` — the two-species map of Sugihara et al. (2012) and its
  2–5-species generalisation.
- :func:`rossler_lorenz` — a Rössler oscillator driving a Lorenz system through
  ``C·x2²`` (the setting of Butler et al., NeurIPS 2024, TSCI).
- :func:`lorenz96` — the Lorenz-96 ring (parents of ``i``: ``i−2, i−1, i+1``).
- :func:`rossler_ring` — diffusively coupled Rössler oscillators on a directed ring
  (or any directed graph).
- :func:`add_observation_noise` — Gaussian noise at a fraction of each channel's sd.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "System",
    "add_observation_noise",
    "coupled_logistic",
    "integrate_rk4",
    "lorenz96",
    "random_sparse_graph",
    "rossler_lorenz",
    "rossler_ring",
]


@dataclass(frozen=True)
class System:
    """An observed multivariate series with its causal ground truth.

    ``data`` is (T, d); ``graph[i, j]`` is True when ``names[i]`` drives ``names[j]``
    (the diagonal is False). ``params`` records what generated it.
    """

    data: np.ndarray
    names: tuple[str, ...]
    graph: np.ndarray
    params: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.data.ndim != 2 or self.data.shape[1] != len(self.names):
            raise ValueError(
                f"data must be (T, {len(self.names)}) for names {self.names}, got {self.data.shape}"
            )
        if self.graph.shape != (len(self.names),) * 2:
            raise ValueError(f"graph must be (d, d), got {self.graph.shape}")

    def column(self, name: str) -> np.ndarray:
        """The series of one channel."""
        try:
            return self.data[:, self.names.index(name)]
        except ValueError:
            raise KeyError(f"no channel {name!r}; channels are {self.names}") from None


def _check_rng(rng: object) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
    return rng


def _check_length(n: int, name: str = "n") -> int:
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"{name} must be a positive integer, got {n!r}")
    return int(n)


def integrate_rk4(
    rhs: Callable[[np.ndarray], np.ndarray],
    x0: np.ndarray,
    n: int,
    dt: float,
    *,
    substeps: int = 1,
    burn_in: int = 0,
) -> np.ndarray:
    """Integrate ``ẋ = rhs(x)`` with RK4; returns ``n`` samples spaced ``dt`` after ``burn_in``.

    ``substeps`` RK4 steps of ``dt / substeps`` are taken between samples. ``x0`` may
    carry leading batch dimensions; the result is (n, *x0.shape).
    """
    n, substeps = _check_length(n), _check_length(substeps, "substeps")
    if not dt > 0:
        raise ValueError(f"dt must be positive, got {dt}")
    h = dt / substeps
    x = np.array(x0, dtype=float)
    out = np.empty((n, *x.shape))
    for i in range(burn_in + n):
        for _ in range(substeps):
            k1 = rhs(x)
            k2 = rhs(x + 0.5 * h * k1)
            k3 = rhs(x + 0.5 * h * k2)
            k4 = rhs(x + h * k3)
            x = x + (h / 6.0) * (k1 + 2 * k2 + 2 * k3 + k4)
        if i >= burn_in:
            out[i - burn_in] = x
    if not np.all(np.isfinite(out)):
        raise FloatingPointError("the integration diverged; reduce dt or the coupling")
    return out


def coupled_logistic(
    n: int,
    rng: np.random.Generator,
    *,
    r: tuple[float, ...] = (3.8, 3.5),
    beta: np.ndarray | None = None,
    burn_in: int = 100,
    max_tries: int = 50,
) -> System:
    """Coupled logistic maps (Sugihara et al. 2012, Science 338:496, Fig. 3).

    ``x_i(t+1) = x_i(t) (r_i − r_i x_i(t) − Σ_j β_ij x_j(t))``: ``beta[i, j]`` is the
    effect of species ``j`` on species ``i``, so ``j → i`` when ``beta[i, j] ≠ 0``.
    The default is the two-species system with ``β_xy = 0.02`` and ``β_yx = 0.1``
    (x drives y strongly). Initial conditions are drawn in (0.2, 0.5) and redrawn if
    a trajectory leaves (0, 1).
    """
    n, rng = _check_length(n), _check_rng(rng)
    rates = np.asarray(r, dtype=float)
    d = rates.size
    if not 2 <= d <= 5:
        raise ValueError(f"coupled_logistic supports 2–5 species, got {d}")
    if beta is None:
        if d != 2:
            raise ValueError("beta must be given for more than two species")
        beta = np.array([[0.0, 0.02], [0.1, 0.0]])
    beta = np.asarray(beta, dtype=float)
    if beta.shape != (d, d):
        raise ValueError(f"beta must be ({d}, {d}), got {beta.shape}")
    beta = beta * (1 - np.eye(d))
    for _ in range(max_tries):
        x = rng.uniform(0.2, 0.5, size=d)
        out = np.empty((n, d))
        ok = True
        for t in range(burn_in + n):
            x = x * (rates - rates * x - beta @ x)
            if not np.all((x > 0) & (x < 1)):
                ok = False
                break
            if t >= burn_in:
                out[t - burn_in] = x
        if ok:
            names = ("x", "y") if d == 2 else tuple(f"x{i}" for i in range(d))
            return System(out, names, (beta != 0).T.copy(), {"r": rates.tolist(), "beta": beta})
    raise ValueError(f"no bounded trajectory in {max_tries} tries; the coupling is too strong")


def rossler_lorenz(
    n: int,
    rng: np.random.Generator,
    *,
    coupling: float = 1.0,
    dt: float = 110.0 / 8000,
    burn_in: int = 2000,
    substeps: int = 2,
) -> System:
    """A Rössler system driving a Lorenz system (TSCI, Butler et al. 2024, §5).

    ``ẋ1 = −6(x2 + x3)``, ``ẋ2 = 6(x1 + 0.2 x2)``, ``ẋ3 = 6(0.2 + x3 (x1 − 5.7))``;
    ``ẏ1 = 10(y2 − y1)``, ``ẏ2 = 28 y1 − y2 − y1 y3 + C x2²``, ``ẏ3 = y1 y2 − 8/3 y3``.
    Channels ``x1, x2, x3, y1, y2, y3``; the graph has ``x2 → y2`` (and the within-system
    links) when ``C > 0``. The default ``dt`` samples t ∈ [0, 110] with 8000 points.
    """
    n, rng = _check_length(n), _check_rng(rng)
    if coupling < 0:
        raise ValueError(f"coupling must be non-negative, got {coupling}")

    def rhs(s: np.ndarray) -> np.ndarray:
        x1, x2, x3, y1, y2, y3 = s
        return np.array(
            [
                -6.0 * (x2 + x3),
                6.0 * (x1 + 0.2 * x2),
                6.0 * (0.2 + x3 * (x1 - 5.7)),
                10.0 * (y2 - y1),
                28.0 * y1 - y2 - y1 * y3 + coupling * x2**2,
                y1 * y2 - 8.0 / 3.0 * y3,
            ]
        )

    driver = rng.uniform(-1, 1, 3) + np.array([0, 0, 0.5])
    driven = rng.uniform(-5, 5, 3) + np.array([0, 0, 20])
    x0 = np.concatenate([driver, driven])
    data = integrate_rk4(rhs, x0, n, dt, substeps=substeps, burn_in=burn_in)
    graph = np.zeros((6, 6), dtype=bool)
    # within Rössler: x1 <- x2, x3; x2 <- x1; x3 <- x1 (self-terms omitted)
    for i, j in [(1, 0), (2, 0), (0, 1), (0, 2), (4, 3), (3, 4), (5, 4), (3, 5), (4, 5)]:
        graph[i, j] = True
    if coupling > 0:
        graph[1, 4] = True
    names = ("x1", "x2", "x3", "y1", "y2", "y3")
    return System(data, names, graph, {"coupling": coupling, "dt": dt})


def random_sparse_graph(
    d: int, rng: np.random.Generator, *, in_degree: int = 1, ring: bool = True
) -> np.ndarray:
    """A sparse directed graph (``graph[i, j]``: i → j) without self-loops.

    With ``ring`` every node ``j`` has parent ``j − 1`` plus ``in_degree − 1`` random
    parents; otherwise ``in_degree`` random parents.
    """
    d, rng = _check_length(d, "d"), _check_rng(rng)
    if d < 2 or not 0 <= in_degree < d:
        raise ValueError(f"need d >= 2 and 0 <= in_degree < d, got d={d}, in_degree={in_degree}")
    graph = np.zeros((d, d), dtype=bool)
    for j in range(d):
        parents = [(j - 1) % d] if ring and in_degree > 0 else []
        pool = [i for i in range(d) if i != j and i not in parents]
        extra = in_degree - len(parents)
        if extra > 0:
            parents += list(rng.choice(pool, size=extra, replace=False))
        graph[parents, j] = True
    return graph


def lorenz96(
    n: int,
    rng: np.random.Generator,
    *,
    d: int = 10,
    forcing: float = 8.0,
    dt: float = 0.05,
    burn_in: int = 1000,
    substeps: int = 5,
) -> System:
    """Lorenz-96 (Lorenz 1996), the standard causal-discovery benchmark.

    ``ẋ_i = (x_{i+1} − x_{i−2}) x_{i−1} − x_i + F`` on a ring: a sparse directed graph
    in which the parents of ``i`` are ``i−2, i−1, i+1``. For arbitrary sparse directed
    graphs use :func:`rossler_ring` with ``graph=``.
    """
    n, rng = _check_length(n), _check_rng(rng)
    d = _check_length(d, "d")
    if d < 4:
        raise ValueError(f"Lorenz-96 needs d >= 4, got {d}")
    idx = np.arange(d)

    def rhs(x: np.ndarray) -> np.ndarray:
        return (np.roll(x, -1) - np.roll(x, 2)) * np.roll(x, 1) - x + forcing

    truth = np.zeros((d, d), dtype=bool)
    for off in (-2, -1, 1):
        truth[(idx + off) % d, idx] = True
    x0 = forcing + rng.normal(0, 0.5, size=d)
    data = integrate_rk4(rhs, x0, n, dt, substeps=substeps, burn_in=burn_in)
    names = tuple(f"x{i}" for i in range(d))
    return System(data, names, truth, {"forcing": forcing, "dt": dt, "d": d})


def rossler_ring(
    n: int,
    rng: np.random.Generator,
    *,
    d: int = 5,
    coupling: float = 0.1,
    graph: np.ndarray | None = None,
    dt: float = 0.1,
    burn_in: int = 2000,
    substeps: int = 2,
    a: float = 0.2,
    b: float = 0.2,
    c: float = 5.7,
) -> System:
    """Rössler oscillators coupled through their x-components on a directed graph.

    ``ẋ_j = −ω_j y_j − z_j + C Σ_{i→j} (x_i − x_j)``, ``ẏ_j = ω_j x_j + a y_j``,
    ``ż_j = b + z_j (x_j − c)``, with ``ω_j`` drawn in (0.95, 1.05) so the oscillators
    are not identical. Default graph: the ring ``j − 1 → j``. Observed: the x-components.
    """
    n, rng = _check_length(n), _check_rng(rng)
    d = _check_length(d, "d")
    if d < 2:
        raise ValueError(f"need at least two oscillators, got {d}")
    if graph is None:
        graph = np.zeros((d, d), dtype=bool)
        graph[(np.arange(d) - 1) % d, np.arange(d)] = True
    graph = np.asarray(graph, dtype=bool) & ~np.eye(d, dtype=bool)
    if graph.shape != (d, d):
        raise ValueError(f"graph must be ({d}, {d}), got {graph.shape}")
    adj = graph.astype(float)
    indeg = adj.sum(axis=0)
    omega = rng.uniform(0.95, 1.05, size=d)

    def rhs(s: np.ndarray) -> np.ndarray:
        x, y, z = s
        diffusive = x @ adj - indeg * x
        return np.stack([-omega * y - z + coupling * diffusive, omega * x + a * y, b + z * (x - c)])

    s0 = rng.uniform(-1, 1, size=(3, d)) + np.array([[0.0], [0.0], [0.5]])
    states = integrate_rk4(rhs, s0, n, dt, substeps=substeps, burn_in=burn_in)
    names = tuple(f"x{i}" for i in range(d))
    return System(
        states[:, 0, :],
        names,
        graph if coupling > 0 else np.zeros_like(graph),
        {
            "coupling": coupling,
            "omega": omega.tolist(),
            "dt": dt,
        },
    )


def add_observation_noise(data: np.ndarray, level: float, rng: np.random.Generator) -> np.ndarray:
    """``data + level · sd_channel · N(0, 1)``: noise as a fraction of each channel's sd."""
    rng = _check_rng(rng)
    data = np.asarray(data, dtype=float)
    if level < 0:
        raise ValueError(f"noise level must be non-negative, got {level}")
    if level == 0:
        return data.copy()
    sd = data.std(axis=0, keepdims=True) if data.ndim > 1 else data.std()
    return data + level * sd * rng.standard_normal(data.shape)
