"""Rank-wise saliency for LoRA adapters (SA-Merging, Sec. 3.4).

An adapter adds ``ΔW^l = s B^l A^l`` (``B: d_out × r``, ``A: r × d_in``) to the base
weight of each target module. SA-Merging prunes whole rank-1 components ``b_k a_kᵀ``:

    G^l      = ∂R/∂ΔW^l                   (read off the factor gradients:
                                           ∂R/∂B = s G Aᵀ, so  b_kᵀ G a_k = b_kᵀ (∂R/∂B)_{:,k} / s)
    γ_{n,k}  = b_{n,k}ᵀ G_n^l a_{n,k}      (sensitivity)
    η_{n,k}  = b_{n,k}ᵀ ΔW̄^l a_{n,k}       (agreement, ΔW̄ = Σ_i ΔW_i, from r × r products)
    score    = |γ η|;   B ← B Diag(m),  A ← Diag(m) A

so adapters stay factored and each keeps rank ≤ r. The pruning runs ``T`` rounds with
the target rank ``max(1, round(r (1 − p)^t))`` after round ``t`` (reconstructed: the
paper states no rounding rule). :func:`elementwise_lora_merge` is the ablation that
materialises ``ΔW`` and prunes entries with :func:`~icml26.samerging.sa_merge`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor

from icml26.samerging.merge import MergeResult, as_state_dict, sa_merge

__all__ = [
    "LoraAdapter",
    "LoraMergeResult",
    "check_adapters",
    "elementwise_lora_merge",
    "lora_task_arithmetic",
    "rank_saliency_merge",
]


@dataclass
class LoraAdapter:
    """LoRA factors per target weight (``"<module>.weight"`` of the base state dict).

    ``A[key]``: ``r × d_in``, ``B[key]``: ``d_out × r``; ``ΔW = scaling · B A``.
    """

    A: dict[str, Tensor]
    B: dict[str, Tensor]
    scaling: float = 1.0
    masks: dict[str, Tensor] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if set(self.A) != set(self.B):
            raise ValueError(
                f"LoRA A and B factors name different weights: {sorted(set(self.A) ^ set(self.B))}"
            )
        for k in self.A:
            a, b = self.A[k], self.B[k]
            if a.ndim != 2 or b.ndim != 2 or a.shape[0] != b.shape[1]:
                raise ValueError(
                    f"LoRA factors of {k!r} do not chain: B {tuple(b.shape)}, A {tuple(a.shape)}"
                )

    @property
    def targets(self) -> tuple[str, ...]:
        return tuple(sorted(self.A))

    def rank(self, key: str) -> int:
        """The number of kept rank-1 components of ``key``."""
        m = self.masks.get(key)
        return int(self.A[key].shape[0] if m is None else m.sum())

    def delta(self, key: str) -> Tensor:
        """``ΔW = s B Diag(m) A`` (materialised; for evaluation and the ablation)."""
        m = self.masks.get(key)
        b = self.B[key] if m is None else self.B[key] * m.to(self.B[key].dtype)
        return self.scaling * (b @ self.A[key])

    def pruned(self) -> LoraAdapter:
        """The factored adapter with masked ranks removed (``B Diag(m)``, ``Diag(m) A``)."""
        a, b = {}, {}
        for k in self.A:
            m = self.masks.get(k, torch.ones(self.A[k].shape[0], dtype=torch.bool))
            a[k], b[k] = self.A[k][m], self.B[k][:, m]
        return LoraAdapter(a, b, self.scaling)


def check_adapters(base: Mapping[str, Tensor], adapters: Sequence[LoraAdapter]) -> None:
    """Same target modules in every adapter, each fitting the base weight's shape."""
    if not adapters:
        raise ValueError("need at least one adapter to merge")
    first = adapters[0].targets
    for n, ad in enumerate(adapters):
        if ad.targets != first:
            raise ValueError(
                f"adapter {n} targets {list(ad.targets)} but adapter 0 targets {list(first)}: "
                "adapters with different target modules cannot be merged rank-wise"
            )
        for k in ad.targets:
            if k not in base:
                raise ValueError(f"adapter {n} targets {k!r}, which the base lacks")
            want = tuple(base[k].shape)
            got = (ad.B[k].shape[0], ad.A[k].shape[1])
            if got != want:
                raise ValueError(f"adapter {n}: ΔW of {k!r} would be {got}, the base is {want}")


def _merged_state(base, adapters, keys, scale=1.0) -> dict[str, Tensor]:
    out = {k: v.clone() for k, v in base.items()}
    for k in keys:
        total = sum(ad.delta(k).to(torch.float64) for ad in adapters)
        out[k] = (base[k].to(torch.float64) + scale * total).to(base[k].dtype)
    return out


def lora_task_arithmetic(base, adapters: Sequence[LoraAdapter], *, scale: float = 1.0):
    """``θ_0 + λ Σ_n s B_n A_n`` (peft ``add_weighted_adapter(combination_type="linear")``
    with weights λ, up to its ``sqrt`` weighting)."""
    base_sd = as_state_dict(base, "base")
    check_adapters(base_sd, adapters)
    return _merged_state(base_sd, adapters, adapters[0].targets, scale)


@dataclass
class LoraMergeResult:
    state_dict: dict[str, Tensor]
    adapters: list[LoraAdapter]
    history: list[dict]

    @property
    def ranks(self) -> list[dict[str, int]]:
        return [{k: ad.rank(k) for k in ad.targets} for ad in self.adapters]


def rank_saliency_merge(
    base,
    adapters: Sequence[LoraAdapter],
    path,
    *,
    iterations: int = 10,
    prune: float = 0.2,
    scale: float = 1.0,
) -> LoraMergeResult:
    """Rank-wise SA-Merging of LoRA adapters sharing ``base`` (data-free).

    ``path`` is the path network over the base's tensors; the adapters' targets must be
    on it. Returns the merged state dict ``θ_0 + λ Σ_n s B_n Diag(m_n) A_n`` and the
    masked adapters (``adapter.pruned()`` gives the factored, rank-reduced one).
    """
    if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1:
        raise ValueError(f"iterations T must be an integer >= 1, got {iterations!r}")
    if not 0 < prune < 1:
        raise ValueError(f"prune ratio p must lie in (0, 1), got {prune!r}")
    base_sd = as_state_dict(base, "base")
    check_adapters(base_sd, adapters)
    targets = adapters[0].targets
    missing = [k for k in targets if k not in path.keys]
    if missing:
        raise ValueError(f"LoRA target {missing[0]!r} is not on the path network")
    ads = [
        LoraAdapter(
            {k: v.detach().to(torch.float64) for k, v in ad.A.items()},
            {k: v.detach().to(torch.float64) for k, v in ad.B.items()},
            ad.scaling,
            {k: torch.ones(ad.A[k].shape[0], dtype=torch.bool) for k in ad.A},
        )
        for ad in adapters
    ]
    history = []
    for t in range(iterations):
        # ΔW̄ in factored form: (s_i, B_i Diag(m_i), A_i) per adapter
        factors = {k: [(ad.scaling, ad.B[k] * ad.masks[k], ad.A[k]) for ad in ads] for k in targets}
        for ad in ads:
            b_vars = {k: (ad.B[k] * ad.masks[k]).clone().requires_grad_(True) for k in targets}
            params = {}
            for k in path.keys:
                w = base_sd[k].to(torch.float64)
                if k in b_vars:
                    w = w + ad.scaling * (b_vars[k] @ ad.A[k])
                params[k] = w.abs()  # ∂R/∂ΔW = sign(θ_0 + ΔW) ⊙ P: the literal G
            r, _ = path(params)
            grads = torch.autograd.grad(r, [b_vars[k] for k in targets])
            for k, g_b in zip(targets, grads, strict=True):
                b = b_vars[k].detach()
                gamma = (b * g_b).sum(0) / ad.scaling  # b_kᵀ G a_k
                eta = torch.zeros_like(gamma)
                for s_i, b_i, a_i in factors[k]:
                    eta += s_i * ((b.T @ b_i) * (ad.A[k] @ a_i.T)).sum(1)  # b_kᵀ ΔW_i a_k
                score = (gamma * eta).abs()
                alive = ad.masks[k]
                r_full = alive.numel()
                target = max(1, round(r_full * (1 - prune) ** (t + 1)))
                keep = min(target, int(alive.sum()))
                score = torch.where(alive, score, torch.full_like(score, -1.0))
                new = torch.zeros_like(alive)
                new[torch.topk(score, keep).indices] = True
                ad.masks[k] = new & alive
        history.append(
            {"iteration": t + 1, "ranks": [sum(ad.rank(k) for k in targets) for ad in ads]}
        )
    out = []
    for ad, orig in zip(ads, adapters, strict=True):
        out.append(
            LoraAdapter(
                {k: v.to(orig.A[k].dtype) for k, v in orig.A.items()},
                {k: v.to(orig.B[k].dtype) for k, v in orig.B.items()},
                orig.scaling,
                dict(ad.masks),
            )
        )
    return LoraMergeResult(_merged_state(base_sd, out, targets, scale), out, history)


def elementwise_lora_merge(
    base,
    adapters: Sequence[LoraAdapter],
    path,
    *,
    iterations: int = 10,
    prune: float = 0.2,
    scale: float = 1.0,
    saliency: str = "sign_aware",
) -> MergeResult:
    """Ablation: materialise each ``ΔW_n`` and prune its entries with :func:`sa_merge`."""
    base_sd = as_state_dict(base, "base")
    check_adapters(base_sd, adapters)
    targets = list(adapters[0].targets)
    experts = []
    for ad in adapters:
        ex = dict(base_sd)
        for k in targets:
            ex[k] = (base_sd[k].to(torch.float64) + ad.delta(k).to(torch.float64)).to(
                base_sd[k].dtype
            )
        experts.append(ex)
    return sa_merge(
        base_sd,
        experts,
        path=path,
        iterations=iterations,
        prune=prune,
        scale=scale,
        saliency=saliency,
        keys=list(path.keys),
    )
