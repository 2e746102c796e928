"""Fixed-size candidate sets and hard-negative mining (official ``candidates.py``,
``hard_mining.py``).

Every training query is scored against K candidates, never the whole hub:

1. the positive (always at position 0);
2. up to ``k_hard`` hard negatives from the mining cache of its gold model;
3. ``k_semantic`` *semantic* negatives drawn from the parent group of its domain
   (``router_semantic_pool_mode: parent_group``: every model whose domain shares the
   area, e.g. all "computer vision *" models);
4. ``k_far`` negatives from other domains, plus whatever the semantic pool lacked;
5. random models to fill up to K.

Paper/official sizes: K = 64 = 1 + 15 hard + 38 semantic + 10 far. The sampling is
vectorised: each stage draws without replacement by taking the top-k of uniform keys
over the models allowed in that stage.

:class:`HardNegativeMiner` keeps, per gold model, the ``pool`` highest-scoring wrong
models of its semantic pool under the current router. The official trainer re-mines
every ``router_mine_every_steps`` steps from the current batch, which over its thousands
of steps covers the training set; at our step counts that covers a few percent of the
gold models, so :meth:`HardNegativeMiner.mine` re-mines over the experience's whole
training set at once (scores averaged over each gold model's queries).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class CandidateSpec:
    """K and the share of each kind of negative."""

    k_total: int = 64
    k_semantic: int = 38
    k_far: int = 10
    k_hard: int = 15

    def __post_init__(self) -> None:
        for name in ("k_total", "k_semantic", "k_far", "k_hard"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
        if self.k_total < 2:
            raise ValueError(f"k_total must be at least 2, got {self.k_total}")
        if 1 + self.k_semantic + self.k_far + self.k_hard > self.k_total:
            raise ValueError(
                f"1 + k_semantic + k_far + k_hard = "
                f"{1 + self.k_semantic + self.k_far + self.k_hard} exceeds k_total = {self.k_total}"
            )


# stage labels, returned by CandidateSampler.sample(..., return_kinds=True)
POSITIVE, HARD, SEMANTIC, FAR, FILL = 0, 1, 2, 3, 4


class CandidateSampler:
    """Builds (B, K) candidate index tensors for gold models (see module docstring).

    ``model_domain`` and ``domain_area`` are integer lookups of the hub: the domain of
    each registered model and the area (parent group) of each domain.
    """

    def __init__(
        self, spec: CandidateSpec, model_domain: torch.Tensor, domain_area: torch.Tensor
    ) -> None:
        self.spec = spec
        self.model_domain = torch.as_tensor(model_domain, dtype=torch.long)
        self.domain_area = torch.as_tensor(domain_area, dtype=torch.long)
        self.model_area = self.domain_area[self.model_domain]

    def sample(
        self,
        gold: torch.Tensor,
        domain: torch.Tensor,
        n_models: int,
        *,
        hard_cache: torch.Tensor | None = None,
        generator: torch.Generator | None = None,
        return_kinds: bool = False,
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """Candidates over the first ``n_models`` registry rows; column 0 is ``gold``.

        ``hard_cache`` is (n_models_total, pool) of mined indices (-1 = none).
        With fewer than K registered models every row holds all of them.
        """
        s = self.spec
        device = gold.device
        b = gold.shape[0]
        if n_models < 1 or n_models > self.model_domain.shape[0]:
            raise ValueError(
                f"n_models must lie in [1, {self.model_domain.shape[0]}], got {n_models}"
            )
        if b and (int(gold.min()) < 0 or int(gold.max()) >= n_models):
            raise ValueError(
                f"gold indices must lie in [0, {n_models}); a gold model is unregistered"
            )
        k = min(s.k_total, n_models)
        m_dom = self.model_domain[:n_models].to(device)
        m_area = self.model_area[:n_models].to(device)
        q_area = self.domain_area.to(device)[domain]
        rows = torch.arange(b, device=device)

        # level: higher = earlier in the set; -inf = not allowed. Filled stage by stage.
        level = torch.zeros(b, n_models, device=device)
        chosen = torch.zeros(b, n_models, dtype=torch.bool, device=device)
        chosen[rows, gold] = True
        level[rows, gold] = 5.0

        n_hard = torch.zeros(b, dtype=torch.long, device=device)
        if s.k_hard and hard_cache is not None:
            cached = hard_cache.to(device)[gold]  # (B, pool), in mined order
            valid = (cached >= 0) & (cached < n_models) & (cached != gold[:, None])
            rank = torch.cumsum(valid.long(), dim=1)
            take = valid & (rank <= s.k_hard)
            r_idx, c_idx = take.nonzero(as_tuple=True)
            picked = cached[r_idx, c_idx]
            # earlier in the mined list = harder = placed first
            level[r_idx, picked] = 4.0 + 0.5 / (1.0 + c_idx.float())
            chosen[r_idx, picked] = True
            n_hard = take.sum(dim=1)

        def draw(allowed: torch.Tensor, quota: torch.Tensor, value: float) -> torch.Tensor:
            allowed = allowed & ~chosen
            keys = torch.rand(b, n_models, generator=generator, device=device)
            keys = keys.masked_fill(~allowed, -1.0)
            kmax = int(quota.max()) if b else 0
            if kmax == 0:
                return torch.zeros(b, dtype=torch.long, device=device)
            kmax = min(kmax, n_models)
            top_val, top_idx = keys.topk(kmax, dim=1)
            pos = torch.arange(kmax, device=device)[None, :]
            take = (top_val >= 0) & (pos < quota[:, None])
            r_idx, c_idx = take.nonzero(as_tuple=True)
            picked = top_idx[r_idx, c_idx]
            level[r_idx, picked] = value
            chosen[r_idx, picked] = True
            return take.sum(dim=1)

        sem_pool = m_area[None, :] == q_area[:, None]
        n_sem = draw(sem_pool, torch.full((b,), s.k_semantic, device=device), 3.0)
        far_pool = m_dom[None, :] != domain[:, None]
        n_far = draw(far_pool, s.k_far + (s.k_semantic - n_sem), 2.0)
        # random fill: every remaining model gets a key in (0, 1)
        fill = torch.rand(b, n_models, generator=generator, device=device)
        level = torch.where(chosen, level, fill)
        _, order = level.topk(k, dim=1)
        if not return_kinds:
            return order
        kinds = torch.full((b, k), FILL, dtype=torch.long, device=device)
        kinds[:, 0] = POSITIVE
        pos = torch.arange(k, device=device)[None, :]
        kinds = torch.where((pos >= 1) & (pos < 1 + n_hard[:, None]), HARD, kinds)
        start = 1 + n_hard[:, None]
        kinds = torch.where((pos >= start) & (pos < start + n_sem[:, None]), SEMANTIC, kinds)
        start = start + n_sem[:, None]
        kinds = torch.where((pos >= start) & (pos < start + n_far[:, None]), FAR, kinds)
        return order, kinds


class HardNegativeMiner:
    """Per gold model, the ``pool`` top-scoring wrong models of its semantic pool.

    Official ``HardNegativeMiner.update_cache``: raw (unnormalised) prompt embedding
    dotted with raw model embeddings, restricted to the parent-group pool, top
    ``K_hard_pool`` (= 50) kept; the candidate builder then takes the first ``k_hard``.
    """

    def __init__(self, n_models_max: int, pool: int = 50, *, device: torch.device | str = "cpu"):
        if pool < 1:
            raise ValueError(f"pool must be positive, got {pool}")
        self.pool = pool
        self.cache = torch.full((n_models_max, pool), -1, dtype=torch.long, device=device)

    def reset(self) -> None:
        self.cache.fill_(-1)

    @property
    def coverage(self) -> int:
        """How many gold models have a mined list."""
        return int((self.cache[:, 0] >= 0).sum())

    @torch.no_grad()
    def mine(
        self,
        query_vectors: torch.Tensor,
        gold: torch.Tensor,
        model_embeddings: torch.Tensor,
        sampler: CandidateSampler,
        *,
        chunk: int = 2048,
    ) -> None:
        """Mine for every gold model of a training set at once.

        ``query_vectors`` (N, d) are the raw h(q)W of all N training queries; the score of
        a wrong model m for gold model g is the mean of q·v(m) over g's queries, and the
        pool is g's parent group (the semantic pool), as in :meth:`update`.
        """
        n_models = model_embeddings.shape[0]
        device = query_vectors.device
        gold = gold.to(device)
        if gold.numel() == 0:
            return
        uniq, inv = torch.unique(gold, return_inverse=True)
        sums = torch.zeros(len(uniq), n_models, device=device, dtype=query_vectors.dtype)
        for start in range(0, len(gold), chunk):
            part = slice(start, start + chunk)
            sums.index_add_(0, inv[part], query_vectors[part] @ model_embeddings.T)
        counts = torch.bincount(inv, minlength=len(uniq)).clamp(min=1)
        scores = sums / counts[:, None].to(sums.dtype)
        g_area = sampler.model_area.to(device)[uniq]
        m_area = sampler.model_area[:n_models].to(device)
        allowed = m_area[None, :] == g_area[:, None]
        allowed[torch.arange(len(uniq), device=device), uniq] = False
        scores = scores.masked_fill(~allowed, float("-inf"))
        k = min(self.pool, n_models)
        top_val, top_idx = scores.topk(k, dim=1)
        top_idx = top_idx.masked_fill(torch.isinf(top_val), -1)
        row = torch.full((len(uniq), self.pool), -1, dtype=torch.long, device=device)
        row[:, :k] = top_idx
        self.cache = self.cache.to(device)
        self.cache[uniq] = row

    @torch.no_grad()
    def update(
        self,
        query_vectors: torch.Tensor,
        gold: torch.Tensor,
        domain: torch.Tensor,
        model_embeddings: torch.Tensor,
        sampler: CandidateSampler,
    ) -> None:
        """Mine for one batch: (B, d) raw query vectors against (n_models, d) raw rows."""
        n_models = model_embeddings.shape[0]
        device = query_vectors.device
        scores = query_vectors @ model_embeddings.T  # (B, n_models)
        m_area = sampler.model_area[:n_models].to(device)
        q_area = sampler.domain_area.to(device)[domain]
        allowed = m_area[None, :] == q_area[:, None]
        allowed[torch.arange(len(gold), device=device), gold] = False
        scores = scores.masked_fill(~allowed, float("-inf"))
        k = min(self.pool, n_models)
        top_val, top_idx = scores.topk(k, dim=1)
        top_idx = top_idx.masked_fill(torch.isinf(top_val), -1)
        row = torch.full((len(gold), self.pool), -1, dtype=torch.long, device=device)
        row[:, :k] = top_idx
        self.cache = self.cache.to(device)
        self.cache[gold] = row
