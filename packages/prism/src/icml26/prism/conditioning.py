"""Model conditioning at inference: V/J-gene ids and IMGT region ids per sequence.

The official v34 models are trained with ``use_germline_genes`` and
``use_region_embedding`` (``configs/v34_*.yaml``), and their scoring passes the same
``v_gene_ids``, ``j_gene_ids`` and ``region_ids`` (``api.py`` fills them from ANARCI;
``evaluate_flab2_binding.py``). A model trained with these embeddings is read with the
same inputs here: every scoring, generation and embedding function takes
``v_gene=``, ``j_gene=`` and ``regions=``, turned into token-level tensors by
:class:`Conditioning`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from icml26.prism.germline import SPECIAL_REGION
from icml26.prism.vocab import CLS, EOS, PAD

#: ``v_gene`` / ``j_gene``: one id per sequence, or one id for all of them
GeneIds = int | Sequence[int] | np.ndarray | None
#: ``regions``: one region id per residue (VH then VL), per sequence or for all of them
RegionIds = Sequence[int] | np.ndarray | Sequence[Sequence[int] | np.ndarray] | None


@dataclass(frozen=True)
class Conditioning:
    """V/J-gene ids (N,) and per-residue region ids of N sequences (any may be absent)."""

    v_gene: np.ndarray | None = None
    j_gene: np.ndarray | None = None
    regions: tuple[np.ndarray, ...] | None = None

    @classmethod
    def build(
        cls,
        n: int,
        *,
        v_gene: GeneIds = None,
        j_gene: GeneIds = None,
        regions: RegionIds = None,
    ) -> Conditioning | None:
        """Broadcast and validate; ``None`` when nothing is given."""
        if v_gene is None and j_gene is None and regions is None:
            return None
        if (v_gene is None) != (j_gene is None):
            raise ValueError("give both v_gene and j_gene (the gene embedding reads the pair)")

        def genes(x: GeneIds, name: str) -> np.ndarray | None:
            if x is None:
                return None
            arr = np.asarray(x)
            if arr.ndim == 0:
                arr = np.full(n, int(arr))
            if arr.shape != (n,) or not np.issubdtype(arr.dtype, np.integer):
                raise ValueError(f"{name} needs one integer id per sequence ({n}), got {arr!r}")
            if (arr < 0).any():
                raise ValueError(f"{name} ids must be non-negative")
            return arr.astype(np.int64)

        regs = None
        if regions is not None:
            if len(regions) and np.ndim(regions[0]) == 1:  # one array per sequence
                regs = tuple(np.asarray(r, dtype=np.int64) for r in regions)
            else:  # one array for every sequence
                regs = (np.asarray(regions, dtype=np.int64),) * n
            if len(regs) != n:
                raise ValueError(f"regions needs one array per sequence ({n}), got {len(regs)}")
        return cls(genes(v_gene, "v_gene"), genes(j_gene, "j_gene"), regs)

    def slice(self, start: int, stop: int) -> Conditioning:
        """The conditioning of sequences ``start:stop``."""

        def part(a):
            return None if a is None else a[start:stop]

        return Conditioning(part(self.v_gene), part(self.j_gene), part(self.regions))

    def check(self, model: torch.nn.Module) -> None:
        """A clear error when the model lacks the embeddings this conditioning feeds."""
        cfg = model.config
        if self.v_gene is not None:
            if not (cfg.n_v_genes and cfg.n_j_genes):
                raise ValueError("the model was built without V/J-gene embeddings (n_v_genes = 0)")
            if self.v_gene.max() >= cfg.n_v_genes or self.j_gene.max() >= cfg.n_j_genes:
                raise ValueError(
                    f"gene ids out of range: the model knows {cfg.n_v_genes} V and "
                    f"{cfg.n_j_genes} J genes"
                )
        if self.regions is not None:
            if not cfg.n_regions:
                raise ValueError("the model was built without region embeddings (n_regions = 0)")
            top = max(int(r.max(initial=0)) for r in self.regions)
            if top >= cfg.n_regions or min(int(r.min(initial=0)) for r in self.regions) < 0:
                raise ValueError(f"region ids must lie in [0, {cfg.n_regions})")

    def tensors(self, input_ids: np.ndarray, device: torch.device) -> dict[str, torch.Tensor]:
        """Forward keyword arguments for the rows of ``input_ids`` (N, T): gene ids
        (N,) and region ids (N, T), special tokens in the special region."""
        out: dict[str, torch.Tensor] = {}
        if self.v_gene is not None:
            out["v_gene_ids"] = torch.as_tensor(self.v_gene, device=device)
            out["j_gene_ids"] = torch.as_tensor(self.j_gene, device=device)
        if self.regions is not None:
            ids = np.asarray(input_ids)
            residue = (ids != PAD) & (ids != CLS) & (ids != EOS)
            tok = np.full(ids.shape, SPECIAL_REGION, dtype=np.int64)
            for i, r in enumerate(self.regions):
                pos = np.flatnonzero(residue[i])
                if len(r) != len(pos):
                    raise ValueError(f"sequence {i}: {len(pos)} residues but {len(r)} region ids")
                tok[i, pos] = r
            out["region_ids"] = torch.as_tensor(tok, device=device)
        return out


def rows_of(kwargs: dict[str, torch.Tensor], rows: torch.Tensor) -> dict[str, torch.Tensor]:
    """The conditioning of a batch of rows (gene ids and region ids index alike)."""
    return {k: v.index_select(0, rows) for k, v in kwargs.items()}
