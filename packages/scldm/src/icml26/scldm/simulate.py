"""A gamma–Poisson simulator of single-cell counts in the spirit of Splatter
(reconstructed; the paper's datasets are not available offline).

For cell n of type k(n), batch b(n) and perturbation p(n)::

    log a_{n,l} = A_{k,l} + Δ_{p,l} + σ_cell · ε_{n,l}           # program activities (log-normal)
    η_{n,g}   = log μ_g + Σ_l W_{g,l} log a_{n,l} + β_{b,g} + σ_gene · ε_{n,g}
    λ_{n,g}   = l_n · softmax_g(η_{n,·}),   log l_n ~ Normal(log 2000, 0.4)
    x_{n,g}   ~ Poisson(Gamma(shape = 1/φ_g, scale = λ_{n,g} φ_g))

- μ_g ~ Gamma(0.6, 3): base expression; φ_g ~ U(φ_min, φ_max): dispersion;
- W: L gene programs (modules of 20–40 genes, loadings ±U(0.5, 1.5)). The shared
  cell-level jitter ε_{n,l} moves all genes of a program together, which creates the
  gene–gene dependencies an independent-gene model cannot reproduce, and gives
  continuous variation within each type;
- A_{k,l} ~ Normal(0, σ_type): cell-type program activities;
- Δ_{p,l}: a perturbation shifts a few programs by ±``perturbation_effect``
  (p = 0 is the control);
- β_{b,g} ~ Normal(0, σ_batch): batch effects; optional technical dropout.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from icml26.shared import numpy_rng


def simulate_counts(
    n_cells: int = 3000,
    n_genes: int = 200,
    *,
    n_cell_types: int = 5,
    n_programs: int = 8,
    program_size: tuple[int, int] = (20, 40),
    type_activity_sd: float = 1.0,
    cell_jitter_sd: float = 0.5,
    gene_noise_sd: float = 0.1,
    n_batches: int = 1,
    batch_effect_sd: float = 0.1,
    n_perturbations: int = 0,
    perturbed_programs: int = 2,
    perturbation_effect: float = 1.5,
    library_log_mean: float = math.log(2000.0),
    library_log_sd: float = 0.4,
    dispersion: tuple[float, float] = (0.1, 0.5),
    dropout: float = 0.0,
    seed: int = 0,
) -> Any:
    """Simulate raw counts; returns an AnnData (counts in ``.X``).

    ``.obs`` holds ``cell_type``, ``batch``, ``perturbation`` (when
    ``n_perturbations > 0``; "control" and "pert_1"...), and the true ``library_size``;
    ``.var`` the program of each gene and its base mean and dispersion;
    ``.obsm["program_activity"]`` the log program activities; ``.uns["simulation"]``
    the parameters.
    """
    import anndata as ad

    for name, value, low in (
        ("n_cells", n_cells, 1),
        ("n_genes", n_genes, 2),
        ("n_cell_types", n_cell_types, 1),
        ("n_programs", n_programs, 0),
        ("n_batches", n_batches, 1),
        ("n_perturbations", n_perturbations, 0),
    ):
        if not isinstance(value, int | np.integer) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    lo, hi = program_size
    if not 1 <= lo <= hi:
        raise ValueError(f"program_size must satisfy 1 <= low <= high, got {program_size}")
    if not 0 < dispersion[0] <= dispersion[1]:
        raise ValueError(f"dispersion must be a positive (low, high) range, got {dispersion}")
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"dropout must lie in [0, 1), got {dropout}")
    rng = numpy_rng(seed, "simulate")

    base = rng.gamma(0.6, 3.0, size=n_genes) + 1e-3
    phi = rng.uniform(dispersion[0], dispersion[1], size=n_genes)
    loadings = np.zeros((n_genes, n_programs))
    program_of = np.full(n_genes, -1)
    for prog in range(n_programs):
        size = min(int(rng.integers(lo, hi + 1)), n_genes)
        genes = rng.choice(n_genes, size=size, replace=False)
        sign = np.where(rng.random(size) < 0.8, 1.0, -1.0)
        loadings[genes, prog] = sign * rng.uniform(0.5, 1.5, size=size)
        program_of[genes] = prog
    type_activity = rng.normal(0.0, type_activity_sd, size=(n_cell_types, n_programs))
    batch_shift = rng.normal(0.0, batch_effect_sd, size=(n_batches, n_genes))
    pert_shift = np.zeros((n_perturbations + 1, n_programs))
    for p in range(1, n_perturbations + 1):
        hit = rng.choice(n_programs, size=min(perturbed_programs, n_programs), replace=False)
        pert_shift[p, hit] = rng.choice([-1.0, 1.0], size=hit.size) * perturbation_effect

    cell_type = rng.integers(n_cell_types, size=n_cells)
    batch = rng.integers(n_batches, size=n_cells)
    pert = rng.integers(n_perturbations + 1, size=n_cells)
    activity = (
        type_activity[cell_type]
        + pert_shift[pert]
        + cell_jitter_sd * rng.standard_normal((n_cells, n_programs))
    )
    eta = (
        np.log(base)[None]
        + activity @ loadings.T
        + batch_shift[batch]
        + gene_noise_sd * rng.standard_normal((n_cells, n_genes))
    )
    eta -= eta.max(axis=1, keepdims=True)
    share = np.exp(eta)
    share /= share.sum(axis=1, keepdims=True)
    library = np.exp(rng.normal(library_log_mean, library_log_sd, size=n_cells))
    rate = library[:, None] * share
    counts = rng.poisson(rng.gamma(1.0 / phi[None], rate * phi[None])).astype(np.float32)
    if dropout > 0:
        counts[rng.random(counts.shape) < dropout] = 0.0
    # every cell keeps at least one count (an empty cell carries no information)
    empty = counts.sum(axis=1) == 0
    counts[empty, np.argmax(rate[empty], axis=1)] = 1.0

    obs = pd.DataFrame(
        {
            "cell_type": pd.Categorical(
                [f"type_{k}" for k in cell_type],
                categories=[f"type_{k}" for k in range(n_cell_types)],
            ),
            "batch": pd.Categorical(
                [f"batch_{b}" for b in batch], categories=[f"batch_{b}" for b in range(n_batches)]
            ),
            "library_size": library,
            "total_counts": counts.sum(axis=1),
        },
        index=[f"cell_{i}" for i in range(n_cells)],
    )
    if n_perturbations:
        names = ["control"] + [f"pert_{p}" for p in range(1, n_perturbations + 1)]
        obs.insert(2, "perturbation", pd.Categorical([names[p] for p in pert], categories=names))
    width = len(str(n_genes - 1))
    var = pd.DataFrame(
        {"program": program_of, "base_mean": base, "dispersion": phi},
        index=[f"gene_{g:0{width}d}" for g in range(n_genes)],
    )
    adata = ad.AnnData(X=counts, obs=obs, var=var)
    adata.obsm["program_activity"] = activity.astype(np.float32)
    adata.uns["simulation"] = {
        "seed": int(seed),
        "n_programs": int(n_programs),
        "type_activity_sd": float(type_activity_sd),
        "cell_jitter_sd": float(cell_jitter_sd),
        "gene_noise_sd": float(gene_noise_sd),
        "batch_effect_sd": float(batch_effect_sd),
        "perturbation_effect": float(perturbation_effect),
        "library_log_mean": float(library_log_mean),
        "library_log_sd": float(library_log_sd),
        "dispersion": [float(d) for d in dispersion],
        "dropout": float(dropout),
    }
    return adata
