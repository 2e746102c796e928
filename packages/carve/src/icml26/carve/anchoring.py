"""Checkpoint-based asymmetric anchoring (paper §4; official ``router_regularizers.py``).

At the start of experience t a frozen copy of the old registry rows {v_{t-1}(m)} and of
the projection Θ_{t-1} is taken. During phase 1 of the experience the loss gains

    L_emb  = mean over old ids m of (1 - cos(v_t(m), v_{t-1}(m)))     (mode "normalized")
    L_proj = mean over projection tensors of mean((θ - θ_{t-1})²)

weighted by λ_emb = 1e4 and λ_proj = 5e4. Rows of models registered in experience t are
*not* anchored (asymmetry keeps plasticity), nor is the adapter (LoRA is not anchored).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from icml26.carve.router import CarveRouter


class Anchor:
    """A snapshot of a router taken before it learns a new experience."""

    def __init__(self, router: CarveRouter, n_old: int) -> None:
        if not 0 <= n_old <= router.num_models:
            raise ValueError(f"n_old must lie in [0, {router.num_models}], got {n_old}")
        self.n_old = int(n_old)
        self.rows = router.model_embeddings.weight[:n_old].detach().clone()
        self.projection = {k: v.detach().clone() for k, v in router.projection.named_parameters()}

    def embedding_loss(self, router: CarveRouter) -> torch.Tensor:
        """L_emb over the old rows only (0 when there are none)."""
        w = router.model_embeddings.weight
        if self.n_old == 0:
            return w.sum() * 0.0
        ref = self.rows.to(w.device, w.dtype)
        cos = F.cosine_similarity(w[: self.n_old].float(), ref.float(), dim=-1).clamp(-1, 1)
        return (1.0 - cos).mean()

    def projection_loss(self, router: CarveRouter) -> torch.Tensor:
        """L_proj: mean over projection tensors of their mean squared change."""
        losses = [
            (p.float() - self.projection[k].to(p.device).float()).pow(2).mean()
            for k, p in router.projection.named_parameters()
        ]
        return torch.stack(losses).mean()
