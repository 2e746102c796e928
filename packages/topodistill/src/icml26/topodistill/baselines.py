"""Peers and baselines behind the ``peers`` extra.

- :func:`pyedm_ccm` — the Sugihara lab's reference CCM (``pyEDM.CCM``), returned as a
  :class:`~icml26.topodistill.ccm.CCMResult` so it lines up with ours.
- :func:`pcmci_pvalues` — PCMCI with partial-correlation tests (Runge et al. 2019,
  ``tigramite``).
- :func:`granger_pvalues` — pairwise Granger causality, SSR F-test (``statsmodels``).

Plain delay-embedding CCM, the paper's main baseline, is
:func:`icml26.topodistill.ccm.ccm` (it matches pyEDM; see the tests and benchmark).
Every p-value matrix follows the package convention ``p[i, j]``: evidence for i → j.

pyEDM runs CCM in worker processes (``forkserver``/``spawn``): a script calling
:func:`pyedm_ccm` with ``parallel=True`` needs an ``if __name__ == "__main__":`` guard.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from icml26.topodistill.ccm import CCMResult
from icml26.topodistill.embedding import check_series

__all__ = ["granger_pvalues", "pcmci_pvalues", "pyedm_ccm"]


def _need(module: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise ImportError(
            f"{module} is needed here: pip install 'icml26-topodistill[peers]'"
        ) from err


def pyedm_ccm(
    x: object,
    y: object,
    *,
    E: int,
    tau: int = 1,
    lib_sizes: Sequence[int],
    samples: int = 50,
    exclusion_radius: int = 0,
    seed: int = 0,
    parallel: bool | int = False,
) -> tuple[CCMResult, CCMResult]:
    """pyEDM's CCM on ``x`` and ``y``: returns ``(x:y, y:x)`` (M_x cross-maps y, and back).

    pyEDM reports only the subsample mean per library size, so ``skill`` has one
    column.
    """
    pyedm = _need("pyEDM")
    pandas = _need("pandas")
    xs, ys = check_series(x, "x"), check_series(y, "y")
    if xs.size != ys.size:
        raise ValueError(f"x and y differ in length: {xs.size} vs {ys.size}")
    frame = pandas.DataFrame({"time": np.arange(xs.size), "x": xs, "y": ys})
    out = pyedm.CCM(
        dataFrame=frame,
        columns="x",
        target="y",
        E=int(E),
        tau=-int(tau),
        libSizes=[int(s) for s in lib_sizes],
        sample=int(samples),
        exclusionRadius=int(exclusion_radius),
        seed=int(seed),
        parallel=parallel,
    )
    sizes = out["LibSize"].to_numpy().astype(int)

    def result(col: str) -> CCMResult:
        return CCMResult(
            sizes,
            out[col].to_numpy()[:, None],
            int(E),
            int(tau),
            int(E) + 1,
            int(exclusion_radius),
            label=col,
        )

    return result("x:y"), result("y:x")


def pcmci_pvalues(
    data: np.ndarray, *, tau_max: int = 5, pc_alpha: float | None = 0.2
) -> np.ndarray:
    """PCMCI (ParCorr) p-values ``p[i, j]`` for i → j, the minimum over lags 1..tau_max."""
    data = np.asarray(data, dtype=float)
    if data.ndim != 2 or not np.all(np.isfinite(data)):
        raise ValueError("data must be a finite (T, d) array")
    pp = _need("tigramite.data_processing")
    pcmci_mod = _need("tigramite.pcmci")
    parcorr = _need("tigramite.independence_tests.parcorr")
    frame = pp.DataFrame(data)
    pcmci = pcmci_mod.PCMCI(dataframe=frame, cond_ind_test=parcorr.ParCorr(), verbosity=0)
    res = pcmci.run_pcmci(tau_min=1, tau_max=int(tau_max), pc_alpha=pc_alpha)
    p = res["p_matrix"][:, :, 1:].min(axis=2)  # p_matrix[i, j, lag]: X_i(t − lag) → X_j(t)
    np.fill_diagonal(p, 1.0)
    return p


def granger_pvalues(data: np.ndarray, *, max_lag: int = 5) -> np.ndarray:
    """Pairwise Granger-causality p-values ``p[i, j]`` (i → j), SSR F-test, min over lags."""
    data = np.asarray(data, dtype=float)
    if data.ndim != 2 or not np.all(np.isfinite(data)):
        raise ValueError("data must be a finite (T, d) array")
    stattools = _need("statsmodels.tsa.stattools")
    d = data.shape[1]
    p = np.ones((d, d))
    for i in range(d):
        for j in range(d):
            if i == j:
                continue
            # grangercausalitytests asks whether column 2 Granger-causes column 1
            res = stattools.grangercausalitytests(data[:, [j, i]], maxlag=int(max_lag))
            p[i, j] = min(r[0]["ssr_ftest"][1] for r in res.values())
    return p
