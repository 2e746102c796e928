"""SA-Merging: iterative saliency-aware pruning of task vectors (Park et al., Alg. 1).

    for t in 1..T:
        τ* = Σ_i τ_i                                  (from the already-masked vectors)
        for n in 1..N:
            g_n = ∂R_n/∂τ_n                           (one autodiff pass, data-free)
            S_n = g_n ⊙ τ*                            (consensus modulation)
            m_n = top-(1 − p) of S_n within each tensor, among surviving entries
            τ_n ← m_n ⊙ τ_n
    θ = θ_0 + λ Σ_n τ_n                               (density ≈ (1 − p)^T)

The ablations of the paper are options of the same loop: ``score="magnitude"`` puts
``τ_n`` in place of ``g_n`` (magnitude × consensus, iterative), ``consensus=False``
ranks by SynFlow's own ``|g_n| ⊙ |τ_n|``, and ``iterations=1`` is one-shot.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from icml26.samerging.saliency import (
    SALIENCY_VARIANTS,
    chain_path_from_state_dict,
    connectivity_gradient,
)

__all__ = [
    "MergeResult",
    "as_state_dict",
    "check_experts",
    "merge_keys",
    "sa_merge",
    "task_vectors",
    "topk_mask",
]

SCORES = ("synflow", "magnitude")


def as_state_dict(obj, what: str = "model") -> dict[str, Tensor]:
    """A detached state dict from an ``nn.Module`` or a mapping of tensors."""
    if isinstance(obj, nn.Module):
        return {k: v.detach() for k, v in obj.state_dict().items()}
    if isinstance(obj, Mapping):
        out = {}
        for k, v in obj.items():
            if not isinstance(v, Tensor):
                raise TypeError(f"{what}: entry {k!r} is a {type(v).__name__}, not a torch.Tensor")
            out[k] = v.detach()
        return out
    raise TypeError(f"{what} must be an nn.Module or a state dict, got {type(obj).__name__}")


def check_experts(
    base: Mapping[str, Tensor], experts: Sequence[Mapping[str, Tensor]], keys: Sequence[str]
) -> None:
    """Raise a ``ValueError`` naming the tensor when an expert does not fit the base."""
    if len(experts) == 0:
        raise ValueError("need at least one expert to merge")
    for k in keys:
        if k not in base:
            raise ValueError(f"tensor {k!r} is missing from the base model")
    for n, ex in enumerate(experts):
        missing = [k for k in keys if k not in ex]
        if missing:
            raise ValueError(
                f"expert {n} lacks tensor {missing[0]!r} of the base ({len(missing)} missing): "
                "the architectures do not match"
            )
        for k in keys:
            b, e = base[k], ex[k]
            if b.shape != e.shape:
                raise ValueError(
                    f"tensor {k!r}: expert {n} has shape {tuple(e.shape)}, the base "
                    f"{tuple(b.shape)}"
                )
            if b.dtype != e.dtype:
                raise ValueError(
                    f"tensor {k!r}: expert {n} has dtype {e.dtype}, the base {b.dtype}"
                )


def merge_keys(base: Mapping[str, Tensor], keys: Sequence[str] | None = None) -> list[str]:
    """The tensors to merge: ``keys`` or every floating-point tensor of the base."""
    if keys is not None:
        return list(keys)
    return [k for k, v in base.items() if torch.is_floating_point(v)]


def task_vectors(
    base: Mapping[str, Tensor], experts: Sequence[Mapping[str, Tensor]], keys: Sequence[str]
) -> list[dict[str, Tensor]]:
    """``τ_n = θ_n − θ_0`` on ``keys``."""
    return [{k: ex[k] - base[k] for k in keys} for ex in experts]


def topk_mask(score: Tensor, alive: Tensor, keep: float) -> Tensor:
    """Keep the top ``keep`` fraction of the ``alive`` entries of one tensor by ``score``."""
    n_alive = int(alive.sum())
    k = round(keep * n_alive)
    if k >= n_alive:
        return alive.clone()
    mask = torch.zeros_like(alive)
    if k <= 0:
        return mask
    flat = torch.where(alive, score, torch.full_like(score, -math.inf)).flatten()
    idx = torch.topk(flat, k, sorted=False).indices
    mask.view(-1)[idx] = True
    return mask


@dataclass
class MergeResult:
    """The merged state dict, the masked task vectors and the masks per expert."""

    state_dict: dict[str, Tensor]
    task_vectors: list[dict[str, Tensor]]
    masks: list[dict[str, Tensor]]
    history: list[dict] = field(default_factory=list)

    @property
    def density(self) -> float:
        """Fraction of task-vector entries kept, over experts and merged tensors."""
        kept = sum(int(m.sum()) for ms in self.masks for m in ms.values())
        total = sum(m.numel() for ms in self.masks for m in ms.values())
        return kept / max(total, 1)


def _check_options(iterations: int, prune: float, saliency: str, score: str) -> None:
    if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1:
        raise ValueError(f"iterations T must be an integer >= 1, got {iterations!r}")
    if not 0 < prune < 1:
        raise ValueError(f"prune ratio p must lie in (0, 1), got {prune!r}")
    if saliency not in SALIENCY_VARIANTS:
        raise ValueError(f"saliency must be one of {SALIENCY_VARIANTS}, got {saliency!r}")
    if score not in SCORES:
        raise ValueError(f"score must be one of {SCORES}, got {score!r}")


def sa_merge(
    base,
    experts: Sequence,
    *,
    path=None,
    iterations: int = 10,
    prune: float = 0.2,
    scale: float = 1.0,
    saliency: str = "sign_aware",
    score: str = "synflow",
    consensus: bool = True,
    keys: Sequence[str] | None = None,
) -> MergeResult:
    """Merge experts sharing ``base`` by SA-Merging (data-free).

    Args:
        base, experts: ``nn.Module``s or state dicts with the same tensors.
        path: the path network (:class:`~icml26.samerging.ChainPath`, ``BertPath``);
            default: the chain of the 2-D weights among ``keys``. Tensors outside it are
            ranked by ``|τ_n|`` in place of ``g_n`` (the same consensus modulation).
        iterations: ``T`` (paper: 10). prune: ``p`` per iteration (paper: 0.2).
        scale: final ``λ`` of ``θ_0 + λ Σ τ_n`` (1 by default, reconstructed).
        saliency: ``"sign_aware"`` (default) or ``"literal"``, see :mod:`saliency`.
        score: ``"synflow"`` (the method) or ``"magnitude"`` (ablation: ``g_n = τ_n``).
        consensus: modulate by ``τ*`` (the method) or rank by ``|g_n| ⊙ |τ_n|`` (ablation).
        keys: which tensors to merge (default: every floating tensor of the base).
    """
    _check_options(iterations, prune, saliency, score)
    base_sd = as_state_dict(base, "base")
    expert_sds = [as_state_dict(e, f"expert {n}") for n, e in enumerate(experts)]
    names = merge_keys(base_sd, keys)
    check_experts(base_sd, expert_sds, names)
    if score == "synflow" and path is None:
        path = chain_path_from_state_dict(base_sd, names)
    on_path = set(path.keys) if (score == "synflow" and path is not None) else set()
    for k in sorted(on_path):
        if k not in base_sd:
            raise ValueError(f"the path network needs tensor {k!r}, which the base lacks")
        if k not in names:
            raise ValueError(f"tensor {k!r} is on the path network but not among the merged keys")
    taus = task_vectors(base_sd, expert_sds, names)
    masks = [{k: torch.ones_like(t[k], dtype=torch.bool) for k in names} for t in taus]
    history = []
    for t in range(iterations):
        star = {k: sum(tv[k].to(torch.float64) for tv in taus) for k in names}
        history.append({"iteration": t + 1, "consensus_norm": _norm(star)})
        for n, tau in enumerate(taus):
            grads = {}
            if on_path:
                grads = connectivity_gradient(path, base_sd, tau, saliency=saliency)
            for k in names:
                t64 = tau[k].to(torch.float64)
                g = grads.get(k, t64)
                s = g * star[k] if consensus else g.abs() * t64.abs()
                masks[n][k] = topk_mask(s, masks[n][k], 1.0 - prune)
                tau[k] = tau[k] * masks[n][k]
        history[-1]["density"] = _density(masks)
    merged = {k: v.clone() for k, v in base_sd.items()}
    for k in names:
        total = sum(tv[k].to(torch.float64) for tv in taus)
        merged[k] = (base_sd[k].to(torch.float64) + scale * total).to(base_sd[k].dtype)
    return MergeResult(merged, taus, masks, history)


def _norm(tensors: Mapping[str, Tensor]) -> float:
    return math.sqrt(sum(float((v.double() ** 2).sum()) for v in tensors.values()))


def _density(masks: list[dict[str, Tensor]]) -> float:
    kept = sum(int(m.sum()) for ms in masks for m in ms.values())
    return kept / max(sum(m.numel() for ms in masks for m in ms.values()), 1)
