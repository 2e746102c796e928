"""Cells as sets of (gene, count) tokens (official ``datamodule.tokenize_cells``,
``sample_genes="expressed"``).

The encoder sees only the *expressed* genes of a cell (count > 0), right-padded with
the mask token (id 0, count 0) to the longest cell of the batch; the decoder target is
the full gene vector, zeros included.
"""

from __future__ import annotations

import torch

MASK_TOKEN = 0


def expressed_tokens(
    counts: torch.Tensor, gene_ids: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Pack the expressed genes of each cell to the left.

    Parameters
    ----------
    counts
        (B, G) counts of the cells over the genes ``gene_ids``.
    gene_ids
        (G,) vocabulary ids (1-based; 0 is the mask token).

    Returns
    -------
    genes, values, mask
        (B, S) gene ids, counts and a True-for-real-token mask, with S the largest
        number of expressed genes in the batch. Genes keep their input order.
    """
    if counts.ndim != 2 or gene_ids.ndim != 1 or counts.shape[1] != gene_ids.shape[0]:
        raise ValueError(
            f"counts must be (cells, genes) and gene_ids (genes,), got {tuple(counts.shape)} "
            f"and {tuple(gene_ids.shape)}"
        )
    expressed = counts > 0
    # A stable sort of "not expressed" moves the expressed genes first, in input order.
    order = torch.argsort((~expressed).to(torch.int8), dim=1, stable=True)
    width = max(int(expressed.sum(dim=1).max().item()), 1) if counts.shape[0] else 1
    order = order[:, :width]
    mask = torch.gather(expressed, 1, order)
    genes = torch.where(mask, gene_ids.to(counts.device)[order], MASK_TOKEN)
    values = torch.where(mask, torch.gather(counts, 1, order), 0.0)
    return genes, values, mask
