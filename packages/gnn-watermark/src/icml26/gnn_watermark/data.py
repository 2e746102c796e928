"""Graphs that need no download, and the loader for graphs users bring.

- :func:`sbm_bow`: an attributed stochastic block model with sparse binary
  bag-of-words features correlated with the class (reconstructed stand-in for Amazon
  Photo / Coauthor CS, whose features are sparse binary word indicators);
  :data:`GRAPH_SIZES` holds Photo-, CS- and PubMed-like sizes.
- :func:`pyg_generator`: torch_geometric's own generators (``FakeDataset``,
  ``stochastic_blockmodel_graph``).
- :func:`prepare_data`: checks any user ``torch_geometric.data.Data`` (features,
  edges, labels) and adds a seeded 60/20/20 split when it has none.
- :func:`save_graph` / :func:`load_graph`: ``.pt`` files holding a PyG ``Data`` saved
  with ``torch.save`` or a dict of tensors (read with ``torch.load(weights_only=True)``)
  and ``.npz`` files; :func:`load_edge_list`: an edge list with feature and label files
  (CSV or ``.npy``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Data
from torch_geometric.utils import coalesce, to_undirected

from icml26.shared import numpy_rng

#: the official split (``train_ratio`` / val / test)
DEFAULT_SPLIT = (0.6, 0.2, 0.2)


@dataclass(frozen=True)
class GraphSize:
    """Size of a generated graph: nodes, features, classes and expected degree."""

    num_nodes: int
    num_features: int
    num_classes: int
    avg_degree: float


#: the paper's datasets (nodes, features, classes, mean degree) to mimic offline
GRAPH_SIZES = {
    "photo": GraphSize(7650, 745, 8, 31.1),
    "cs": GraphSize(18333, 6805, 15, 8.9),
    "pubmed": GraphSize(19717, 500, 3, 4.5),
    "smoke": GraphSize(2000, 300, 5, 5.8),
}


def sbm_bow(
    num_nodes: int = 2000,
    num_classes: int = 5,
    num_features: int = 300,
    *,
    p_in: float = 0.01,
    p_out: float = 0.001,
    base_rate: float = 0.02,
    topic_features: int = 30,
    topic_rate: float = 0.3,
    common_features: int = 20,
    common_rate: float = 0.5,
    split: tuple[float, float, float] = DEFAULT_SPLIT,
    seed: int = 0,
) -> Data:
    """An attributed SBM with sparse binary class-correlated features (reconstructed).

    Nodes fall into ``num_classes`` equal blocks (the labels); an edge joins two nodes
    of the same block with probability ``p_in`` and of different blocks with ``p_out``.
    Every feature is a Bernoulli indicator: rate ``base_rate`` by default,
    ``topic_rate`` on ``topic_features`` features specific to the node's class, and
    ``common_rate`` on ``common_features`` features shared by all classes (the "most
    represented" features the watermark will occupy). Feature columns are shuffled.
    Edges are drawn per block pair as a binomial count of uniformly placed pairs
    (duplicates merged), so the cost is linear in the number of edges.
    """
    _positive(num_nodes=num_nodes, num_classes=num_classes, num_features=num_features)
    if num_classes < 2 or num_nodes < 2 * num_classes:
        raise ValueError(
            f"need >= 2 classes and >= 2 nodes per class, got {num_classes}, {num_nodes}"
        )
    if common_features + num_classes * topic_features > num_features:
        raise ValueError(
            f"{common_features} common + {num_classes}×{topic_features} topic features exceed "
            f"num_features={num_features}"
        )
    probabilities = {
        "p_in": p_in,
        "p_out": p_out,
        "base_rate": base_rate,
        "topic_rate": topic_rate,
        "common_rate": common_rate,
    }
    for name, p in probabilities.items():
        if not 0 <= p <= 1:
            raise ValueError(f"{name} must be a probability, got {p}")
    rng = numpy_rng(seed, "sbm_bow")
    y = np.repeat(np.arange(num_classes), int(np.ceil(num_nodes / num_classes)))[:num_nodes]
    y = rng.permutation(y)
    edge_index = _sbm_edges(y, num_classes, p_in, p_out, rng)

    rates = np.full((num_classes, num_features), base_rate)
    cols = rng.permutation(num_features)
    rates[:, cols[:common_features]] = common_rate
    for c in range(num_classes):
        start = common_features + c * topic_features
        rates[c, cols[start : start + topic_features]] = topic_rate
    x = (rng.random((num_nodes, num_features)) < rates[y]).astype(np.float32)

    data = Data(
        x=torch.from_numpy(x),
        edge_index=edge_index,
        y=torch.from_numpy(y.astype(np.int64)),
    )
    return _with_split(data, split, seed)


def sized_sbm_bow(size: str | GraphSize, *, seed: int = 0, **kwargs) -> Data:
    """:func:`sbm_bow` at a named size of :data:`GRAPH_SIZES` (or an explicit :class:`GraphSize`).

    Block probabilities are set so the expected degree matches, with 80 % of edges
    inside blocks; topic features scale with the feature count.
    """
    if isinstance(size, str):
        if size not in GRAPH_SIZES:
            raise ValueError(f"unknown size {size!r}; known: {sorted(GRAPH_SIZES)}")
        size = GRAPH_SIZES[size]
    n, c = size.num_nodes, size.num_classes
    block = n / c
    p_in = min(1.0, 0.8 * size.avg_degree / block)
    p_out = min(1.0, 0.2 * size.avg_degree / (n - block))
    topic = max(5, min(size.num_features // (2 * c), 60))
    common = max(10, min(size.num_features // 15, 50))
    params = {"p_in": p_in, "p_out": p_out, "topic_features": topic, "common_features": common}
    params.update(kwargs)
    return sbm_bow(n, c, size.num_features, seed=seed, **params)


def _sbm_edges(
    y: np.ndarray, k: int, p_in: float, p_out: float, rng: np.random.Generator
) -> Tensor:
    members = [np.flatnonzero(y == c) for c in range(k)]
    src, dst = [], []
    for a in range(k):
        for b in range(a, k):
            na, nb = len(members[a]), len(members[b])
            pairs = na * (na - 1) // 2 if a == b else na * nb
            m = rng.binomial(pairs, p_in if a == b else p_out)
            if m == 0:
                continue
            i = members[a][rng.integers(0, na, m)]
            j = members[b][rng.integers(0, nb, m)]
            keep = i != j
            src.append(i[keep])
            dst.append(j[keep])
    if not src:
        return torch.empty((2, 0), dtype=torch.long)
    ei = torch.from_numpy(np.stack([np.concatenate(src), np.concatenate(dst)]).astype(np.int64))
    return coalesce(to_undirected(ei, num_nodes=len(y)), num_nodes=len(y))


def pyg_generator(name: str, *, seed: int = 0, split=DEFAULT_SPLIT, **kwargs) -> Data:
    """One node-classification graph from torch_geometric's generators, with a split.

    ``"fake"``: ``torch_geometric.datasets.FakeDataset`` (random graph, Gaussian features
    around class means); ``"sbm"``: ``torch_geometric.utils.stochastic_blockmodel_graph``
    edges (dense draw: keep it to a few thousand nodes) with Gaussian features around a
    random mean per block. Keyword arguments go to the generator.
    """
    from torch_geometric.datasets import FakeDataset
    from torch_geometric.utils import stochastic_blockmodel_graph

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        if name == "fake":
            opts = {"avg_num_nodes": 1000, "avg_degree": 8.0, "num_channels": 64, "num_classes": 5}
            opts.update(kwargs)
            data = FakeDataset(num_graphs=1, task="node", **opts)[0]
        elif name == "sbm":
            sizes = torch.as_tensor(kwargs.pop("block_sizes", [300] * 4))
            k = len(sizes)
            probs = kwargs.pop("edge_probs", None)
            if probs is None:
                probs = [[0.02 if i == j else 0.002 for j in range(k)] for i in range(k)]
            channels = int(kwargs.pop("num_channels", 64))
            if kwargs:
                raise TypeError(f"unexpected arguments for 'sbm': {sorted(kwargs)}")
            edge_index = stochastic_blockmodel_graph(sizes, torch.as_tensor(probs))
            y = torch.repeat_interleave(torch.arange(k), sizes)
            x = torch.randn(k, channels)[y] + torch.randn(len(y), channels)
            data = Data(x=x, edge_index=edge_index, y=y)
        else:
            raise ValueError(f"unknown generator {name!r}; use 'fake' or 'sbm'")
    data = Data(x=data.x.float(), edge_index=data.edge_index, y=data.y.long().view(-1))
    return _with_split(data, split, seed)


def prepare_data(data: Data, *, split=DEFAULT_SPLIT, seed: int = 0) -> Data:
    """Check a user graph and return a copy ready for training and watermarking.

    Requires ``x`` (N × F float features), ``edge_index`` (2 × E, node ids in range) and
    ``y`` (N integer labels, >= 2 classes). Existing boolean ``train_mask`` /
    ``val_mask`` / ``test_mask`` are kept; otherwise a seeded split is added.
    """
    if not isinstance(data, Data):
        raise TypeError(f"expected a torch_geometric.data.Data, got {type(data).__name__}")
    x = getattr(data, "x", None)
    if x is None:
        raise ValueError(
            "the graph has no node features (data.x is None); the explanation watermark "
            "regresses outputs on node features, so a featureless graph cannot carry it"
        )
    if not isinstance(x, Tensor) or x.dim() != 2 or x.shape[1] < 1 or x.shape[0] < 2:
        raise ValueError(f"data.x must be an (N, F) tensor with N >= 2, F >= 1, got {_shape(x)}")
    x = x.float()
    if not torch.isfinite(x).all():
        raise ValueError("data.x contains NaN or inf")
    n = x.shape[0]
    ei = getattr(data, "edge_index", None)
    if not isinstance(ei, Tensor) or ei.dim() != 2 or ei.shape[0] != 2:
        raise ValueError(f"data.edge_index must be a (2, E) tensor, got {_shape(ei)}")
    if ei.is_floating_point():
        raise TypeError("data.edge_index must hold integer node ids")
    ei = ei.long()
    if ei.numel() and (ei.min() < 0 or ei.max() >= n):
        raise ValueError(f"data.edge_index refers to nodes outside 0..{n - 1}")
    y = getattr(data, "y", None)
    if not isinstance(y, Tensor) or y.numel() != n:
        raise ValueError(f"data.y must hold one label per node ({n}), got {_shape(y)}")
    if y.is_floating_point() and not torch.equal(y, y.round()):
        raise TypeError("data.y must hold integer class labels")
    y = y.long().view(-1)
    if y.min() < 0 or len(torch.unique(y)) < 2:
        raise ValueError("data.y must hold non-negative labels of at least 2 classes")
    out = Data(x=x, edge_index=ei, y=y)
    masks = [getattr(data, m, None) for m in ("train_mask", "val_mask", "test_mask")]
    if all(isinstance(m, Tensor) and m.dtype == torch.bool and m.shape == (n,) for m in masks):
        if masks[0].sum() < 2:
            raise ValueError("train_mask selects fewer than 2 nodes")
        out.train_mask, out.val_mask, out.test_mask = masks
        return out
    return _with_split(out, split, seed)


def check_graph(data: object, *, what: str = "the graph") -> Data:
    """Raise a clear error unless ``data`` is a graph the public API can use.

    Checks what every entry point relies on: a :class:`~torch_geometric.data.Data` with
    finite (N, F) float features, a (2, E) integer ``edge_index`` inside 0..N-1 and, when
    present, one integer label per node. Returns ``data`` unchanged. The cost is one pass
    over the features (a NaN would otherwise train silently into a NaN loss).
    """
    if not isinstance(data, Data):
        raise TypeError(f"{what} must be a torch_geometric.data.Data, got {type(data).__name__}")
    x = getattr(data, "x", None)
    if x is None:
        raise ValueError(f"{what} has no node features (data.x is None)")
    if not isinstance(x, Tensor) or x.dim() != 2:
        raise ValueError(f"{what} needs (N, F) node features data.x, got {_shape(x)}")
    if not torch.is_floating_point(x):
        raise TypeError(f"{what}: data.x must be a float tensor, got {x.dtype}")
    if not bool(torch.isfinite(x).all()):
        bad = int((~torch.isfinite(x)).any(dim=1).sum())
        raise ValueError(f"{what}: data.x contains NaN or inf (in {bad} of {x.shape[0]} nodes)")
    ei = getattr(data, "edge_index", None)
    if not isinstance(ei, Tensor) or ei.dim() != 2 or ei.shape[0] != 2:
        raise ValueError(f"{what} needs a (2, E) data.edge_index, got {_shape(ei)}")
    if ei.is_floating_point():
        raise TypeError(f"{what}: data.edge_index must hold integer node ids, got {ei.dtype}")
    if ei.numel() and (int(ei.min()) < 0 or int(ei.max()) >= x.shape[0]):
        raise ValueError(
            f"{what}: data.edge_index refers to nodes outside 0..{x.shape[0] - 1} "
            f"(min {int(ei.min())}, max {int(ei.max())})"
        )
    y = getattr(data, "y", None)
    if y is not None and (not isinstance(y, Tensor) or y.numel() != x.shape[0]):
        raise ValueError(f"{what}: data.y must hold one label per node ({x.shape[0]})")
    return data


def check_node_ids(nodes: object, num_nodes: int, *, what: str = "node ids") -> Tensor:
    """``nodes`` as a flat long tensor, or a clear error if they are not ids in 0..N-1."""
    t = torch.as_tensor(np.asarray(nodes) if not isinstance(nodes, Tensor) else nodes)
    if t.is_floating_point() or t.dtype == torch.bool:
        raise TypeError(f"{what} must be integer node ids, got {t.dtype}")
    t = t.long().reshape(-1).cpu()
    if t.numel() and (int(t.min()) < 0 or int(t.max()) >= num_nodes):
        raise ValueError(
            f"{what} must lie in 0..{num_nodes - 1}, got min {int(t.min())}, max {int(t.max())}"
        )
    return t


def save_graph(data: Data, path: str | Path) -> Path:
    """Write a graph as a ``.pt`` dict of tensors (loadable with ``weights_only=True``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({k: v for k, v in data.to_dict().items() if isinstance(v, Tensor)}, path)
    return path


def _pyg_safe_globals() -> list:
    """The PyG classes a ``torch.save``-d ``Data`` pickles; plain data containers, which
    ``torch.load(weights_only=True)`` may rebuild (the loader still refuses everything else)."""
    from torch_geometric.data.data import DataEdgeAttr, DataTensorAttr
    from torch_geometric.data.storage import EdgeStorage, GlobalStorage, NodeStorage

    return [Data, DataEdgeAttr, DataTensorAttr, GlobalStorage, NodeStorage, EdgeStorage]


def load_graph(path: str | Path, *, split=DEFAULT_SPLIT, seed: int = 0) -> Data:
    """Read a graph file and check it with :func:`prepare_data`. Nothing is unpickled
    beyond tensors and PyG's data containers.

    - ``.pt``: a ``torch_geometric.data.Data`` saved with ``torch.save(data, path)``, or a
      dict of tensors (:func:`save_graph`); read with ``torch.load(weights_only=True)``.
    - ``.npz``: arrays ``x``, ``edge_index`` (2 × E or E × 2), ``y`` and optional masks.

    Edge lists with feature and label files (CSV, ``.npy``) go through :func:`load_edge_list`.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(path)
    if path.suffix == ".pt":
        try:
            with torch.serialization.safe_globals(_pyg_safe_globals()):
                obj = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as err:  # pickled objects other than tensors / Data are refused
            raise ValueError(
                f"{path} is neither a torch_geometric Data nor a dict of tensors "
                f"(it cannot be read with weights_only=True): {err}"
            ) from err
        if isinstance(obj, Data):
            fields = {k: v for k, v in obj.to_dict().items() if isinstance(v, Tensor)}
        elif isinstance(obj, dict):
            fields = obj
        else:
            raise ValueError(f"{path} holds a {type(obj).__name__}, expected a Data or a dict")
    elif path.suffix == ".npz":
        with np.load(path, allow_pickle=False) as arrays:
            fields = {k: torch.from_numpy(arrays[k]) for k in arrays.files}
        ei = fields.get("edge_index")
        if isinstance(ei, Tensor) and ei.dim() == 2 and ei.shape[0] != 2 and ei.shape[1] == 2:
            fields["edge_index"] = ei.t().contiguous()
    else:
        raise ValueError(
            f"unsupported graph file {path.name}; use .pt or .npz (or load_edge_list for CSV)"
        )
    return prepare_data(Data(**fields), split=split, seed=seed)


def load_edge_list(
    edges: str | Path,
    features: str | Path,
    labels: str | Path,
    *,
    undirected: bool = True,
    split=DEFAULT_SPLIT,
    seed: int = 0,
) -> Data:
    """A graph from three files: an edge list, node features and node labels.

    Each file is CSV (comma-separated, an optional header row) or ``.npy``:

    - ``edges``: two columns, source and target node ids in 0..N-1;
    - ``features``: N rows of F numbers (row i belongs to node i);
    - ``labels``: N integer labels, one per row (a single column), or two columns
      (node id, label) in any order of nodes.

    ``undirected`` adds the reverse of every edge (Photo, CS, PubMed are undirected).
    The result is checked by :func:`prepare_data` and gets a seeded 60/20/20 split.
    """
    x = _read_table(features, "features")
    n = x.shape[0]
    e = _read_table(edges, "edges")
    if e.ndim != 2 or e.shape[1] != 2:
        raise ValueError(f"the edge list must have two columns (source, target), got {e.shape}")
    edge_index = torch.from_numpy(_as_ids(e, "edge list")).t().contiguous()
    if edge_index.numel() and (int(edge_index.min()) < 0 or int(edge_index.max()) >= n):
        raise ValueError(
            f"the edge list refers to nodes outside 0..{n - 1} (the features file has {n} rows)"
        )
    lab = _read_table(labels, "labels")
    if lab.ndim == 2 and lab.shape[1] == 2:
        ids, vals = _as_ids(lab[:, 0], "label node ids"), _as_ids(lab[:, 1], "labels")
        if sorted(ids.tolist()) != list(range(n)):
            raise ValueError(f"the labels file must name every node 0..{n - 1} exactly once")
        y = np.empty(n, dtype=np.int64)
        y[ids] = vals
    elif lab.ndim == 1 or lab.shape[1] == 1:
        y = _as_ids(lab.reshape(-1), "labels")
    else:
        raise ValueError(f"the labels file must have one or two columns, got {lab.shape}")
    if len(y) != n:
        raise ValueError(f"{len(y)} labels for {n} nodes (rows of the features file)")
    if undirected and edge_index.numel():
        edge_index = coalesce(to_undirected(edge_index, num_nodes=n), num_nodes=n)
    data = Data(
        x=torch.from_numpy(x.astype(np.float32)), edge_index=edge_index, y=torch.from_numpy(y)
    )
    return prepare_data(data, split=split, seed=seed)


def _read_table(path: str | Path, what: str) -> np.ndarray:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(path)
    if path.suffix == ".npy":
        arr = np.load(path, allow_pickle=False)
    elif path.suffix in (".csv", ".txt"):
        import csv

        with path.open(newline="") as fh:
            rows = [r for r in csv.reader(fh) if r and any(c.strip() for c in r)]
        if rows and not _numeric(rows[0]):
            rows = rows[1:]  # a header row
        if not rows:
            raise ValueError(f"the {what} file {path.name} holds no rows")
        widths = {len(r) for r in rows}
        if len(widths) != 1:
            raise ValueError(f"the {what} file {path.name} has rows of different lengths {widths}")
        try:
            arr = np.array([[float(c) for c in r] for r in rows])
        except ValueError as err:
            raise ValueError(f"the {what} file {path.name} holds a non-number: {err}") from err
        if arr.shape[1] == 1 and what == "labels":
            arr = arr[:, 0]
    else:
        raise ValueError(f"unsupported {what} file {path.name}; use .csv or .npy")
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"the {what} file {path.name} must hold numbers, got dtype {arr.dtype}")
    if arr.dtype.kind == "f" and not np.isfinite(arr).all():
        raise ValueError(f"the {what} file {path.name} contains NaN or inf")
    return arr


def _numeric(row: list[str]) -> bool:
    try:
        [float(c) for c in row]
    except ValueError:
        return False
    return True


def _as_ids(a: np.ndarray, what: str) -> np.ndarray:
    if a.dtype.kind == "f" and not np.array_equal(a, np.round(a)):
        raise ValueError(f"the {what} must be integers")
    return a.astype(np.int64)


def _with_split(data: Data, split, seed: int) -> Data:
    if len(split) != 3 or any(s < 0 for s in split) or not np.isclose(sum(split), 1.0):
        raise ValueError(f"split must be three non-negative fractions summing to 1, got {split}")
    n = data.num_nodes
    perm = torch.from_numpy(numpy_rng(seed, "split").permutation(n))
    n_train, n_val = int(split[0] * n), int(split[1] * n)
    masks = []
    for idx in (perm[:n_train], perm[n_train : n_train + n_val], perm[n_train + n_val :]):
        m = torch.zeros(n, dtype=torch.bool)
        m[idx] = True
        masks.append(m)
    data.train_mask, data.val_mask, data.test_mask = masks
    return data


def _positive(**values: int) -> None:
    for name, v in values.items():
        if not isinstance(v, int | np.integer) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")


def _shape(obj) -> str:
    return str(tuple(obj.shape)) if isinstance(obj, Tensor) else type(obj).__name__
