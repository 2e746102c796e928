"""PCGrad: gradient surgery for the two training objectives (Yu et al., NeurIPS 2020).

The official code wraps Adam in ``PCGrad`` from WeiChengTseng/Pytorch-PCGrad (not on
PyPI) on every real dataset, with the losses [cross-entropy, r·L_wmk]. Reimplemented
here after that reference: each task gradient g_i, taken in a random order, is
projected onto the normal plane of every *original* gradient g_j it conflicts with
(g_i·g_j < 0):  g_i ← g_i − (g_i·g_j / ‖g_j‖²) g_j.  The projected gradients are then
averaged (the reference's default ``reduction='mean'``) on parameters every task
touches and summed on the others.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor


def pcgrad_backward(
    losses: Sequence[Tensor],
    params: Sequence[torch.nn.Parameter],
    *,
    generator: torch.Generator | None = None,
    reduction: str = "mean",
) -> list[bool]:
    """Write the PCGrad-combined gradient of ``losses`` into ``p.grad`` for ``params``.

    Returns, for each loss, whether its gradient conflicted with another's (was projected).
    """
    if len(losses) < 1:
        raise ValueError("pcgrad_backward needs at least one loss")
    if reduction not in ("mean", "sum"):
        raise ValueError(f"reduction must be 'mean' or 'sum', got {reduction!r}")
    params = [p for p in params if p.requires_grad]
    grads, present = [], []
    for loss in losses:
        gs = torch.autograd.grad(loss, params, retain_graph=True, allow_unused=True)
        grads.append(torch.cat([_flat(g, p) for g, p in zip(gs, params, strict=True)]))
        present.append(torch.cat([_has(g, p) for g, p in zip(gs, params, strict=True)]))

    projected, conflicted = [], []
    for i, g_i in enumerate(grads):
        g = g_i.clone()
        hit = False
        order = torch.randperm(len(grads), generator=generator).tolist()
        for j in order:
            if j == i:
                continue
            g_j = grads[j]
            dot = torch.dot(g, g_j)
            if dot < 0:
                g = g - dot / g_j.pow(2).sum().clamp_min(1e-20) * g_j
                hit = True
        projected.append(g)
        conflicted.append(hit)

    stacked = torch.stack(projected)
    shared = torch.stack(present).all(dim=0)
    merged = stacked.sum(dim=0)
    if reduction == "mean":
        merged = torch.where(shared, stacked.mean(dim=0), merged)

    offset = 0
    for p in params:
        k = p.numel()
        p.grad = merged[offset : offset + k].view_as(p).clone()
        offset += k
    return conflicted


def _flat(g: Tensor | None, p: Tensor) -> Tensor:
    return torch.zeros(p.numel(), device=p.device, dtype=p.dtype) if g is None else g.reshape(-1)


def _has(g: Tensor | None, p: Tensor) -> Tensor:
    return torch.full((p.numel(),), g is not None, device=p.device, dtype=torch.bool)
