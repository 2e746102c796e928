"""The owner's secret: T training subgraphs and the ±1 watermark pattern (method, Steps 1–2).

Key generation follows the official ``subgraph_utils.create_random_subgraph`` and
``watermark_utils.apply_watermark`` (type ``most_represented``):

- T disjoint subgraphs, each the induced subgraph on n_s training nodes drawn
  uniformly (n_s = floor(frac × #train) unless given);
- M watermarked positions: the features with the most nonzero entries among the
  subgraph nodes (the official code counts over the concatenated subgraph features);
- values: floor(M/2) entries +1 and the rest -1, in a seeded random order; the same
  pattern w serves every subgraph.

The key is kept apart from the model and stored as JSON with a SHA-256 digest of its
content, so an edited file is refused, and a digest of the features of its nodes, so
a key is refused on a graph it was not made for.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Data

from icml26.gnn_watermark.data import check_graph
from icml26.shared import numpy_rng

log = logging.getLogger(__name__)

KEY_FORMAT = "icml26-gnn-watermark-key"
KEY_VERSION = 1
#: below this size the n²-row kernel regression is poorly determined (brief: keep n_s >= 15)
SMALL_SUBGRAPH = 15


class KeyMismatchError(ValueError):
    """The key does not belong to this graph (feature count, node ids or node features differ)."""


@dataclass(frozen=True)
class WatermarkKey:
    """Secret subgraph node ids (T × n_s), watermark vector w ∈ {-1, 0, 1}^F and provenance."""

    subgraphs: tuple[tuple[int, ...], ...]
    watermark: tuple[int, ...]
    seed: int
    num_nodes: int
    feature_digest: str

    def __post_init__(self) -> None:
        if len(self.subgraphs) < 2:
            raise ValueError(f"a key needs at least 2 subgraphs, got {len(self.subgraphs)}")
        sizes = {len(s) for s in self.subgraphs}
        if len(sizes) != 1 or min(sizes) < 3:
            raise ValueError(f"key subgraphs must share one size >= 3, got sizes {sorted(sizes)}")
        flat = [i for s in self.subgraphs for i in s]
        if len(set(flat)) != len(flat):
            raise ValueError("key subgraphs must be disjoint")
        if min(flat) < 0 or max(flat) >= self.num_nodes:
            raise ValueError(f"key node ids must lie in 0..{self.num_nodes - 1}")
        if not set(self.watermark) <= {-1, 0, 1} or not any(self.watermark):
            raise ValueError("the watermark must hold values in {-1, 0, 1}, at least one nonzero")

    # -- views -----------------------------------------------------------------------
    @property
    def num_subgraphs(self) -> int:
        return len(self.subgraphs)

    @property
    def subgraph_size(self) -> int:
        return len(self.subgraphs[0])

    @property
    def num_features(self) -> int:
        return len(self.watermark)

    @property
    def nodes(self) -> Tensor:
        """Node ids, (T, n_s) long tensor."""
        return torch.tensor(self.subgraphs, dtype=torch.long)

    @property
    def w(self) -> Tensor:
        """The watermark vector, (F,) float tensor."""
        return torch.tensor(self.watermark, dtype=torch.float32)

    @property
    def positions(self) -> Tensor:
        """Indices of the watermarked features (w_j ≠ 0)."""
        return torch.nonzero(self.w, as_tuple=True)[0]

    # -- compatibility ----------------------------------------------------------------
    def check(self, data: Data) -> None:
        """Raise :class:`KeyMismatchError` unless this key was made for ``data``."""
        x = getattr(data, "x", None)
        if x is None:
            raise ValueError("the graph has no node features (data.x is None)")
        if x.shape[1] != self.num_features:
            raise KeyMismatchError(
                f"key is for {self.num_features} node features, the graph has {x.shape[1]}"
            )
        if x.shape[0] != self.num_nodes:
            raise KeyMismatchError(
                f"key is for a graph of {self.num_nodes} nodes, got {x.shape[0]}"
            )
        if _feature_digest(x, self.nodes) != self.feature_digest:
            raise KeyMismatchError(
                "the features of the key's nodes differ from those the key was made on: "
                "wrong graph, or the graph was changed"
            )

    # -- serialisation ----------------------------------------------------------------
    def _content(self) -> dict:
        return {
            "subgraphs": [list(s) for s in self.subgraphs],
            "watermark": list(self.watermark),
            "seed": self.seed,
            "num_nodes": self.num_nodes,
            "feature_digest": self.feature_digest,
        }

    def digest(self) -> str:
        canonical = json.dumps(self._content(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()

    def to_json(self) -> str:
        doc = {"format": KEY_FORMAT, "version": KEY_VERSION, **self._content()}
        doc["digest"] = self.digest()
        return json.dumps(doc, indent=1)

    @classmethod
    def from_json(cls, text: str) -> WatermarkKey:
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as err:
            raise ValueError(f"not a watermark key (invalid JSON): {err}") from err
        if not isinstance(doc, dict) or doc.get("format") != KEY_FORMAT:
            raise ValueError(f"not a watermark key (format is not {KEY_FORMAT!r})")
        if doc.get("version") != KEY_VERSION:
            raise ValueError(f"unsupported key version {doc.get('version')!r}")
        try:
            key = cls(
                subgraphs=tuple(tuple(int(i) for i in s) for s in doc["subgraphs"]),
                watermark=tuple(int(v) for v in doc["watermark"]),
                seed=int(doc["seed"]),
                num_nodes=int(doc["num_nodes"]),
                feature_digest=str(doc["feature_digest"]),
            )
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(f"malformed watermark key: {err}") from err
        if doc.get("digest") != key.digest():
            raise ValueError(
                "watermark key digest does not match its content: the key was modified"
            )
        return key

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.to_json())
        return path

    @classmethod
    def load(cls, path: str | Path) -> WatermarkKey:
        return cls.from_json(Path(path).read_text())


def generate_key(
    data: Data,
    *,
    num_subgraphs: int = 7,
    subgraph_size: int | None = None,
    size_fraction: float = 0.005,
    watermark_size: int | None = None,
    watermark_percent: float = 3.0,
    seed: int = 0,
) -> WatermarkKey:
    """Draw the secret subgraphs and the watermark pattern (official defaults: T = 7,
    frac = 0.005 of the training nodes, M = 3 % of the features)."""
    check_graph(data)
    x = data.x
    train = getattr(data, "train_mask", None)
    if train is None:
        raise ValueError("the graph has no train_mask; run prepare_data first")
    train_idx = torch.nonzero(train, as_tuple=True)[0].cpu().numpy()
    n_s = subgraph_size if subgraph_size is not None else int(size_fraction * len(train_idx))
    if num_subgraphs < 2:
        raise ValueError(f"num_subgraphs must be >= 2, got {num_subgraphs}")
    if n_s < 3:
        raise ValueError(f"subgraph size must be >= 3 nodes, got {n_s}")
    if n_s < SMALL_SUBGRAPH:
        log.warning("subgraphs of %d nodes give a poorly determined explanation (use >= 15)", n_s)
    if num_subgraphs * n_s > len(train_idx):
        raise ValueError(
            f"{num_subgraphs} disjoint subgraphs of {n_s} nodes need more than the "
            f"{len(train_idx)} training nodes"
        )
    f = x.shape[1]
    m = watermark_size if watermark_size is not None else int(watermark_percent / 100 * f)
    if not 1 <= m <= f:
        raise ValueError(f"watermark size must lie in 1..{f}, got {m}")

    rng = numpy_rng(seed, "key")
    chosen = rng.choice(train_idx, size=num_subgraphs * n_s, replace=False)
    subgraphs = chosen.reshape(num_subgraphs, n_s)
    sub_x = x.detach().cpu()[torch.from_numpy(subgraphs.reshape(-1))]
    from icml26.gnn_watermark.verify import warn_if_dense

    warn_if_dense(sub_x)
    counts = (sub_x != 0).sum(dim=0).numpy()
    positions = np.argsort(-counts, kind="stable")[:m]
    values = np.array([1] * (m // 2) + [-1] * (m - m // 2))[rng.permutation(m)]
    w = np.zeros(f, dtype=int)
    w[positions] = values
    return WatermarkKey(
        subgraphs=tuple(tuple(int(i) for i in s) for s in subgraphs),
        watermark=tuple(int(v) for v in w),
        seed=int(seed),
        num_nodes=int(x.shape[0]),
        feature_digest=_feature_digest(x, torch.from_numpy(subgraphs)),
    )


def _feature_digest(x: Tensor, nodes: Tensor) -> str:
    block = x.detach().cpu()[nodes.reshape(-1).long()].to(torch.float32).contiguous()
    return hashlib.sha256(block.numpy().tobytes()).hexdigest()
