"""AnnData in: counts, condition vocabularies and library sizes.

- :func:`counts_matrix` reads raw counts from ``.X`` or a layer (dense or sparse) and
  rejects what is not a count matrix: negative, non-integer, NaN, empty cells;
- :class:`ConditionVocabulary` maps ``.obs`` columns to class indices and back, and
  rejects unknown keys and values;
- :class:`LibrarySizeModel` keeps the mean and sd of the log-library per condition,
  the statistics the official code samples library sizes from at generation time;
- :func:`read_h5ad` loads an ``.h5ad`` file and checks its counts (``backed="r"``: the
  matrix stays on disk and is read one mini-batch of rows at a time);
- :func:`pbmc68k_counts`: real PBMC counts from the file scanpy ships in its wheel;
- :func:`simulate_counts` (re-exported from :mod:`icml26.scldm.simulate`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import sparse

from icml26.scldm.simulate import simulate_counts

__all__ = [
    "BackedCounts",
    "ConditionVocabulary",
    "LibrarySizeModel",
    "check_anndata",
    "counts_matrix",
    "dense_rows",
    "library_sizes",
    "pbmc68k_counts",
    "read_h5ad",
    "simulate_counts",
]


def check_anndata(adata: Any) -> None:
    """Raise ``TypeError`` unless ``adata`` is an :class:`anndata.AnnData`."""
    from anndata import AnnData

    if not isinstance(adata, AnnData):
        raise TypeError(f"expected an AnnData, got {type(adata).__name__}")
    if adata.n_obs < 1 or adata.n_vars < 1:
        raise ValueError(f"AnnData is empty: {adata.n_obs} cells × {adata.n_vars} genes")


def counts_matrix(
    adata: Any,
    layer: str | None = None,
    *,
    allow_empty_cells: bool = False,
    keep_sparse: bool = False,
) -> Any:
    """The raw counts of ``adata`` as a float32 matrix (cells × genes).

    ``layer=None`` reads ``.X``. Dense by default; with ``keep_sparse`` a sparse input
    stays a CSR matrix (never densified whole: read its rows with :func:`dense_rows`), and
    the ``.X`` of a backed AnnData stays on disk as :class:`BackedCounts`.
    Raises ``ValueError`` for a missing layer and for values that are not counts
    (negative, non-integer, NaN/inf), and, unless ``allow_empty_cells``, for cells
    without a single count.
    """
    check_anndata(adata)
    where = "adata.X" if layer is None else f"adata.layers[{layer!r}]"
    if layer is not None and layer not in adata.layers:
        raise ValueError(f"layer {layer!r} not found; layers: {list(adata.layers.keys())}")
    x = adata.X if layer is None else adata.layers[layer]
    if x is None:
        raise ValueError(f"{where} is empty")
    if layer is None and getattr(adata, "isbacked", False):
        backed = BackedCounts(x, where=where)  # validated while streaming its rows once
        if keep_sparse:
            out = backed
        else:
            out = np.round(dense_rows(backed, slice(None))).astype(np.float32)
        _check_nonempty(adata, out, allow_empty_cells)
        return out
    values = x.data if sparse.issparse(x) else np.asarray(x)
    exact = _check_count_values(values, where)
    if (
        keep_sparse
        and exact
        and isinstance(x, np.ndarray)
        and x.dtype == np.float32
        and x.ndim == 2
        and x.flags.c_contiguous
    ):
        # already float32 whole numbers: the caller's array itself, read only (training,
        # embedding and reconstruction copy one batch of rows at a time), no second copy
        out = x
    elif sparse.issparse(x) and keep_sparse:
        out = sparse.csr_matrix(x, dtype=np.float32, copy=True)
        out.data = np.round(out.data)
    else:
        # one float32 copy, rounded in place (the caller's array is never modified)
        if sparse.issparse(x):
            out = x.toarray().astype(np.float32, copy=False)
        else:
            out = np.array(x, dtype=np.float32, copy=True)
        np.round(out, out=out)
    _check_nonempty(adata, out, allow_empty_cells)
    return out


def _check_count_values(values: np.ndarray, where: str, chunk: int = 1 << 20) -> bool:
    """Raise unless ``values`` are counts; True when every value is a whole number exactly.

    Checked ``chunk`` values at a time, so the temporaries stay small for a large dense
    matrix."""
    if values.dtype.kind not in "biuf":
        raise TypeError(f"{where} must be numeric, got dtype {values.dtype}")
    flat = values.reshape(-1)
    exact = True
    for start in range(0, flat.size, chunk):
        part = flat[start : start + chunk]
        if not np.all(np.isfinite(part)):
            raise ValueError(f"{where} contains NaN or inf; expected raw counts")
        if part.min() < 0:
            raise ValueError(
                f"{where} has negative values (min {values.min()}); expected raw counts"
            )
        frac = np.abs(part - np.round(part))
        worst = frac.max()
        if worst > 1e-6:
            raise ValueError(
                f"{where} has non-integer values (e.g. {part[np.argmax(frac)]}); "
                "expected raw counts, not normalised or log-transformed data"
            )
        exact = exact and worst == 0
    return exact


def _check_nonempty(adata: Any, counts: Any, allow_empty_cells: bool) -> None:
    if allow_empty_cells:
        return
    empty = np.flatnonzero(library_sizes(counts) == 0)
    if empty.size:
        names = ", ".join(map(str, adata.obs_names[empty[:5]]))
        raise ValueError(f"{empty.size} cells have no counts (e.g. {names}); filter them first")


class BackedCounts:
    """The counts of a backed AnnData (``read_h5ad(path, backed="r")``), kept on disk.

    Construction streams the rows once, ``chunk_rows`` at a time, to check that they are
    counts and to sum the library sizes; afterwards ``counts[rows]`` (an index array or a
    slice) reads just those rows from the file, as CSR (sparse on disk) or dense, in the
    order asked for. Host memory grows with the chunk and the batch, not with the file.
    """

    def __init__(self, matrix: Any, *, where: str = "adata.X", chunk_rows: int = 8192):
        if len(getattr(matrix, "shape", ())) != 2:
            raise TypeError(f"{where} must be a 2-D matrix, got {type(matrix).__name__}")
        self.matrix, self.shape = matrix, tuple(matrix.shape)
        library = np.zeros(self.shape[0], dtype=np.float64)
        for start in range(0, self.shape[0], chunk_rows):
            block = matrix[start : start + chunk_rows]
            values = block.data if sparse.issparse(block) else np.asarray(block)
            _check_count_values(values, where)
            library[start : start + chunk_rows] = np.asarray(block.sum(axis=1)).ravel()
        self.library = library

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, rows: Any) -> Any:
        if isinstance(rows, slice):
            block = self.matrix[rows]
        else:  # the file reads increasing rows: read sorted, then restore the order asked
            rows = np.asarray(rows, dtype=np.int64).ravel()
            order, inverse = np.unique(rows, return_inverse=True)
            block = self.matrix[order]
            block = block[inverse.ravel()]
        if sparse.issparse(block):
            block = sparse.csr_matrix(block, dtype=np.float32)
            block.data = np.round(block.data)
            return block
        return np.round(np.asarray(block, dtype=np.float32))


def library_sizes(counts: Any) -> np.ndarray:
    """Total counts per cell of a dense, sparse or backed matrix, as a 1-D float64 array."""
    if isinstance(counts, BackedCounts):
        return counts.library.copy()
    return np.asarray(counts.sum(axis=1), dtype=np.float64).ravel()


def dense_rows(counts: Any, rows: Any) -> np.ndarray:
    """Rows (an index array or a slice) of a dense or CSR matrix as a dense float32 array:
    only those rows are densified."""
    block = counts[rows]
    if sparse.issparse(block):
        block = block.toarray()
    elif isinstance(block, np.ndarray) and not block.flags.owndata:
        block = np.array(block, dtype=np.float32)  # never a view of the caller's matrix
    return np.ascontiguousarray(block, dtype=np.float32)


class RowBatches:
    """Row-indexable view of a dense or CSR count matrix for the training loop:
    ``view[idx]`` is the dense float32 tensor of those rows (one batch densified at a time)."""

    def __init__(self, counts: Any):
        self.counts = counts
        self.shape = counts.shape

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, rows: Any):
        import torch

        if hasattr(rows, "numpy"):
            rows = rows.numpy()
        return torch.from_numpy(dense_rows(self.counts, rows))


def read_h5ad(path: str | Path, *, layer: str | None = None, backed: bool = False) -> Any:
    """Read an ``.h5ad`` file and check that ``.X`` (or ``layer``) holds raw counts.

    ``backed=True`` opens it with ``anndata``'s ``backed="r"``: ``.X`` stays on disk,
    is checked by streaming its rows, and :meth:`ScLDM.fit <icml26.scldm.ScLDM.fit>`,
    ``embed`` and ``reconstruct`` read one mini-batch of rows at a time (layers of a
    backed file are held in memory by ``anndata``; keep the counts in ``.X``).
    """
    import anndata as ad

    path = Path(path)
    if not path.is_file():
        raise ValueError(f"no such file: {path}")
    adata = ad.read_h5ad(path, backed="r" if backed else None)
    counts_matrix(adata, layer, allow_empty_cells=True, keep_sparse=True)
    return adata


def pbmc68k_counts() -> Any:
    """Raw counts of scanpy's bundled ``pbmc68k_reduced`` (700 PBMCs × 765 genes, 10 FACS
    labels), recovered from its ``.raw`` layer; no download.

    ``.raw.X`` holds ``log1p(counts / n_counts · 10⁴)`` (scanpy's ``normalize_per_cell``
    then ``log1p``) and ``.obs["n_counts"]`` the per-cell totals before gene filtering, so
    ``round(expm1(raw.X) · n_counts / 10⁴)`` gives the counts back (largest rounding
    residual 0.08 of a count: the file stores three decimals). The result has the counts
    (CSR) in ``.X`` and a ``"counts"`` layer, the FACS label as the categorical
    ``obs["cell_type"]`` (from ``bulk_labels``) and the Louvain cluster as ``obs["louvain"]``.
    """
    import anndata as ad
    import scanpy as sc

    src = sc.datasets.pbmc68k_reduced()
    logn = src.raw.X.toarray() if sparse.issparse(src.raw.X) else np.asarray(src.raw.X)
    totals = src.obs["n_counts"].to_numpy(dtype=np.float64)[:, None]
    counts = np.round(np.expm1(logn.astype(np.float64)) * totals / 1e4).astype(np.float32)
    obs = pd.DataFrame(index=src.obs_names.astype(str))
    obs["cell_type"] = pd.Categorical(src.obs["bulk_labels"].astype(str))
    obs["louvain"] = pd.Categorical(src.obs["louvain"].astype(str))
    x = sparse.csr_matrix(counts)
    adata = ad.AnnData(X=x, obs=obs, var=pd.DataFrame(index=src.raw.var_names.astype(str)))
    adata.layers["counts"] = x.copy()
    return adata


@dataclass
class ConditionVocabulary:
    """The classes of each condition attribute (an ``.obs`` column), in a fixed order."""

    categories: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def from_obs(cls, obs: pd.DataFrame, keys: Sequence[str]) -> ConditionVocabulary:
        if isinstance(keys, str):
            keys = (keys,)
        cats: dict[str, list[str]] = {}
        for key in keys:
            if key not in obs.columns:
                raise ValueError(
                    f"condition key {key!r} not in adata.obs; columns: {list(obs.columns)}"
                )
            col = obs[key]
            if col.isna().any():
                raise ValueError(f"adata.obs[{key!r}] has {int(col.isna().sum())} missing values")
            if isinstance(col.dtype, pd.CategoricalDtype):
                used = set(col.astype(str))
                cats[key] = [str(c) for c in col.cat.categories if str(c) in used]
            else:
                cats[key] = sorted(set(col.astype(str)))
        return cls(cats)

    @property
    def keys(self) -> list[str]:
        return list(self.categories)

    @property
    def sizes(self) -> dict[str, int]:
        return {k: len(v) for k, v in self.categories.items()}

    def encode_obs(self, obs: pd.DataFrame) -> np.ndarray:
        """Class indices (n_obs, n_keys) of the ``.obs`` rows; unknown values raise."""
        out = np.zeros((len(obs), len(self.categories)), dtype=np.int64)
        for j, key in enumerate(self.categories):
            if key not in obs.columns:
                raise ValueError(f"condition key {key!r} not in adata.obs")
            out[:, j] = self.encode_values(key, obs[key].astype(str).to_numpy())
        return out

    def encode_values(self, key: str, values: Any) -> np.ndarray:
        if key not in self.categories:
            raise ValueError(f"unknown condition key {key!r}; the model knows {self.keys}")
        index = {c: i for i, c in enumerate(self.categories[key])}
        values = np.asarray(values, dtype=object).astype(str)
        unknown = sorted(str(v) for v in set(values) - set(index))
        if unknown:
            raise ValueError(
                f"unknown value(s) {unknown[:5]} for condition {key!r}; "
                f"known: {self.categories[key]}"
            )
        return np.array([index[v] for v in values], dtype=np.int64)

    def encode_request(self, conditions: Mapping[str, Any] | None, n: int) -> dict[str, np.ndarray]:
        """``{key: value or n values}`` -> ``{key: (n,) class indices}``."""
        out: dict[str, np.ndarray] = {}
        for key, value in (conditions or {}).items():
            values = np.atleast_1d(np.asarray(value, dtype=object))
            if values.size == 1:
                values = np.repeat(values, n)
            if values.shape != (n,):
                raise ValueError(f"condition {key!r} needs 1 or {n} values, got {values.size}")
            out[key] = self.encode_values(key, values)
        return out

    def decode(self, key: str, codes: np.ndarray) -> np.ndarray:
        return np.asarray(self.categories[key], dtype=object)[np.asarray(codes)]

    def to_dict(self) -> dict[str, list[str]]:
        return {k: list(v) for k, v in self.categories.items()}


@dataclass
class LibrarySizeModel:
    """Normal(mean, sd) of log library sizes: overall, per class of each attribute, and
    per observed combination of all attributes.

    At generation the most specific statistics available are used: the full
    combination when it was observed, else the first requested attribute (in
    vocabulary order), else the overall ones. Test-cell library sizes are never used.
    """

    overall: tuple[float, float]
    per_class: dict[str, dict[int, tuple[float, float]]] = field(default_factory=dict)
    per_combination: dict[str, tuple[float, float]] = field(default_factory=dict)

    @staticmethod
    def _stats(x: np.ndarray) -> tuple[float, float]:
        return float(x.mean()), float(x.std(ddof=1)) if x.size > 1 else 0.0

    @classmethod
    def fit(cls, library: np.ndarray, codes: np.ndarray, keys: Sequence[str]) -> LibrarySizeModel:
        log_lib = np.log(np.asarray(library, dtype=np.float64))
        per_class = {
            key: {int(c): cls._stats(log_lib[codes[:, j] == c]) for c in np.unique(codes[:, j])}
            for j, key in enumerate(keys)
        }
        per_comb: dict[str, tuple[float, float]] = {}
        if len(keys):
            combos, inverse = np.unique(codes, axis=0, return_inverse=True)
            for i, combo in enumerate(combos):
                per_comb[_combo_key(combo)] = cls._stats(log_lib[inverse.ravel() == i])
        return cls(cls._stats(log_lib), per_class, per_comb)

    def sample(
        self, codes: Mapping[str, np.ndarray], keys: Sequence[str], n: int, rng: np.random.Generator
    ) -> np.ndarray:
        """Library sizes for ``n`` cells requested with class indices ``codes``."""
        mean = np.full(n, self.overall[0])
        sd = np.full(n, self.overall[1])
        given = [k for k in keys if k in codes]
        if given:
            first = given[0]
            for c in np.unique(codes[first]):
                sel = codes[first] == c
                mean[sel], sd[sel] = self.per_class[first].get(int(c), self.overall)
            if len(given) == len(keys) and self.per_combination:
                stacked = np.stack([codes[k] for k in keys], axis=1)
                for combo in np.unique(stacked, axis=0):
                    stats = self.per_combination.get(_combo_key(combo))
                    if stats is not None:
                        sel = np.all(stacked == combo, axis=1)
                        mean[sel], sd[sel] = stats
        return np.exp(mean + sd * rng.standard_normal(n))

    def to_dict(self) -> dict[str, Any]:
        return {
            "overall": list(self.overall),
            "per_class": {
                k: {str(c): list(s) for c, s in v.items()} for k, v in self.per_class.items()
            },
            "per_combination": {k: list(v) for k, v in self.per_combination.items()},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LibrarySizeModel:
        return cls(
            overall=tuple(data["overall"]),
            per_class={
                k: {int(c): tuple(s) for c, s in v.items()} for k, v in data["per_class"].items()
            },
            per_combination={k: tuple(v) for k, v in data["per_combination"].items()},
        )


def _combo_key(combo: np.ndarray) -> str:
    return "_".join(str(int(c)) for c in combo)
