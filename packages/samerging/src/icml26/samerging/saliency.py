"""Connectivity saliency: SynFlow's path score over task vectors (SA-Merging, Sec. 3).

For an expert ``θ_n = θ_0 + τ_n`` the connectivity score is SynFlow's

    R_n(θ_0, τ_n) = 1ᵀ (Π_l |θ_0^l + τ_n^l|) 1,

the network evaluated with every parameter replaced by its absolute value on an
all-ones input, in float64, with normalisation layers as their (absolute) affine maps.
Its gradient splits as ``∂R_n/∂τ_n = sign(θ_0 + τ_n) ⊙ P_n`` with the *path mass*
``P_n = ∂R/∂|θ| ≥ 0``: how many strong end-to-end paths run through a coordinate.

Two readings of the structural sensitivity are exposed (reconstructed, see README):

* ``"literal"``: ``g_n = sign(θ_0 + τ_n) ⊙ P_n``, the gradient exactly as written;
* ``"sign_aware"`` (default): ``g_n = sign(τ_n) ⊙ P_n``, so that ``g_n ⊙ τ*`` is negative
  exactly where an update opposes the aggregate, the behaviour the paper describes.

A path network is any callable taking a mapping of absolute-valued float64 tensors and
returning ``(R̃, log C)`` with ``R = R̃ · C``; :class:`ChainPath` (a chain of linear
layers, exact for MLPs with positively homogeneous activations) and :class:`BertPath`
(a linearised BERT/MiniLM encoder, reconstructed) are provided. Both rescale their
activations after each layer by a detached constant; the identity ``x̃_l = x_l / C_l`` is
kept exact by dividing the biases by the running constant, so every gradient is the
true one times the same ``1 / C``: per-tensor rankings are unchanged.

References:
    Park, Lee, Sohn. *Saliency-Aware Model Merging*. ICML 2026, arXiv:2606.00511.
    Tanaka, Kunin, Yamins, Ganguli. *Pruning neural networks without any data by
    iteratively conserving synaptic flow*. NeurIPS 2020 (SynFlow).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from scipy.stats import spearmanr
from torch import Tensor, nn

__all__ = [
    "SALIENCY_VARIANTS",
    "BertPath",
    "ChainPath",
    "chain_path_from_module",
    "chain_path_from_state_dict",
    "connectivity_gradient",
    "path_mass",
    "path_score",
    "structural_magnitude_spearman",
]

SALIENCY_VARIANTS = ("sign_aware", "literal")


def _rescale(x: Tensor, enabled: bool) -> tuple[Tensor, float]:
    """Divide ``x`` by a detached positive constant (its mean); return it and log(const)."""
    if not enabled:
        return x, 0.0
    c = float(x.detach().mean())
    if not math.isfinite(c) or c <= 0:
        return x, 0.0
    return x / c, math.log(c)


@dataclass(frozen=True)
class ChainPath:
    """SynFlow path network of a chain of linear layers ``(weight_key, bias_key | None)``.

    ``x_{l+1} = |W_l| x_l + |b_l|`` from ``x_0 = 1``; ``R = 1ᵀ x_L``. Exact for MLPs
    whose activations are positively homogeneous (ReLU, leaky ReLU), as SynFlow is.
    """

    layers: tuple[tuple[str, str | None], ...]
    rescale: bool = True

    def __post_init__(self) -> None:
        if not self.layers:
            raise ValueError("a ChainPath needs at least one (weight, bias) layer")

    @property
    def keys(self) -> tuple[str, ...]:
        out: list[str] = []
        for w, b in self.layers:
            out.append(w)
            if b is not None:
                out.append(b)
        return tuple(out)

    def __call__(self, params: Mapping[str, Tensor]) -> tuple[Tensor, float]:
        first = params[self.layers[0][0]]
        x = torch.ones(first.shape[1], dtype=first.dtype, device=first.device)
        log_c = 0.0
        for w_key, b_key in self.layers:
            w = params[w_key]
            if w.shape[1] != x.shape[0]:
                raise ValueError(
                    f"tensor {w_key!r} expects {w.shape[1]} inputs but the chain carries "
                    f"{x.shape[0]}; the layers are not a chain"
                )
            x = w @ x
            if b_key is not None:
                x = x + params[b_key] * math.exp(-log_c)  # b / C keeps x̃ = x / C exact
            x, step = _rescale(x, self.rescale)
            log_c += step
        return x.sum(), log_c


def chain_path_from_state_dict(
    state: Mapping[str, Tensor], keys: Sequence[str] | None = None, *, rescale: bool = True
) -> ChainPath:
    """A :class:`ChainPath` over the 2-D weights of ``state`` in order (biases: ``*.bias``)."""
    names = list(keys) if keys is not None else list(state)
    layers = []
    for k in names:
        if state[k].ndim == 2 and k.endswith("weight"):
            bias = k[: -len("weight")] + "bias"
            layers.append((k, bias if bias in state and bias in names else None))
    if not layers:
        raise ValueError("no 2-D '*.weight' tensors found to build a chain path network")
    return ChainPath(tuple(layers), rescale=rescale)


def chain_path_from_module(module: nn.Module, *, rescale: bool = True) -> ChainPath:
    """A :class:`ChainPath` over the ``nn.Linear`` layers of ``module`` in registration order."""
    layers = []
    for name, sub in module.named_modules():
        if isinstance(sub, nn.Linear):
            prefix = f"{name}." if name else ""
            layers.append((prefix + "weight", prefix + "bias" if sub.bias is not None else None))
    if not layers:
        raise ValueError(f"{type(module).__name__} has no nn.Linear layers")
    return ChainPath(tuple(layers), rescale=rescale)


@dataclass(frozen=True)
class BertPath:
    """Linearised path network of a BERT-style encoder (reconstructed; MiniLM, RoBERTa).

    Per layer, in execution order: ``a = |W_o||W_v||W_k||W_q| x`` (+ absolute biases;
    softmax skipped), residual ``x ← |γ_1| ⊙ (x + a) + |β_1|`` (LayerNorm as its
    diagonal affine map), feed-forward ``f = |W_2||W_1| x``, ``x ← |γ_2| ⊙ (x + f) + |β_2|``.
    Embeddings and pooler are not on the path (input: all ones of the hidden size).
    Key names follow Hugging Face ``BertModel`` (``prefix`` e.g. ``"bert."``).
    """

    num_layers: int
    prefix: str = ""
    rescale: bool = True

    def _layer_keys(self, i: int) -> dict[str, str]:
        p = f"{self.prefix}encoder.layer.{i}."
        return {
            "q": p + "attention.self.query",
            "k": p + "attention.self.key",
            "v": p + "attention.self.value",
            "o": p + "attention.output.dense",
            "ln1": p + "attention.output.LayerNorm",
            "f1": p + "intermediate.dense",
            "f2": p + "output.dense",
            "ln2": p + "output.LayerNorm",
        }

    @property
    def keys(self) -> tuple[str, ...]:
        out = []
        for i in range(self.num_layers):
            for mod in self._layer_keys(i).values():
                out += [mod + ".weight", mod + ".bias"]
        return tuple(out)

    def __call__(self, params: Mapping[str, Tensor]) -> tuple[Tensor, float]:
        k0 = self._layer_keys(0)
        first = params[k0["q"] + ".weight"]
        x = torch.ones(first.shape[1], dtype=first.dtype, device=first.device)
        log_c = 0.0

        def lin(mod: str, h: Tensor) -> Tensor:
            out = params[mod + ".weight"] @ h
            b = params.get(mod + ".bias")
            return out if b is None else out + b * math.exp(-log_c)

        def norm(mod: str, h: Tensor) -> Tensor:
            out = params[mod + ".weight"] * h
            b = params.get(mod + ".bias")
            return out if b is None else out + b * math.exp(-log_c)

        for i in range(self.num_layers):
            k = self._layer_keys(i)
            a = lin(k["o"], lin(k["v"], lin(k["k"], lin(k["q"], x))))
            x = norm(k["ln1"], x + a)
            x = norm(k["ln2"], x + lin(k["f2"], lin(k["f1"], x)))
            x, step = _rescale(x, self.rescale)
            log_c += step
        return x.sum(), log_c


def _abs64(weights: Mapping[str, Tensor], keys: Sequence[str]) -> dict[str, Tensor]:
    out = {}
    for k in keys:
        if k not in weights:
            raise KeyError(f"the path network needs tensor {k!r}, which is missing")
        out[k] = weights[k].detach().to(torch.float64).abs().requires_grad_(True)
    return out


def path_score(path, weights: Mapping[str, Tensor]) -> float:
    """``log R`` of the weights (absolute values, all-ones float64 input)."""
    with torch.no_grad():
        r, log_c = path(_abs64(weights, path.keys))
    return float(torch.log(r)) + log_c


def path_mass(path, weights: Mapping[str, Tensor]) -> dict[str, Tensor]:
    """``P = ∂R/∂|θ|`` at ``|θ|`` (float64, up to one positive constant shared by all tensors)."""
    params = _abs64(weights, path.keys)
    r, _ = path(params)
    if not torch.isfinite(r):
        raise FloatingPointError("the path score R is not finite; enable rescale")
    grads = torch.autograd.grad(r, list(params.values()), allow_unused=True)
    return {
        k: (torch.zeros_like(p) if g is None else g)
        for (k, p), g in zip(params.items(), grads, strict=True)
    }


def connectivity_gradient(
    path,
    base: Mapping[str, Tensor],
    tau: Mapping[str, Tensor],
    *,
    saliency: str = "sign_aware",
) -> dict[str, Tensor]:
    """Structural sensitivity ``g_n`` of the expert ``θ_0 + τ_n`` on the path's tensors.

    ``"literal"``: ``sign(θ_0 + τ) ⊙ P`` (= ∂R/∂τ); ``"sign_aware"``: ``sign(τ) ⊙ P``.
    """
    if saliency not in SALIENCY_VARIANTS:
        raise ValueError(f"saliency must be one of {SALIENCY_VARIANTS}, got {saliency!r}")
    weights = {k: base[k].to(torch.float64) + tau[k].to(torch.float64) for k in path.keys}
    mass = path_mass(path, weights)
    ref = weights if saliency == "literal" else tau
    return {k: torch.sign(ref[k].to(torch.float64)) * mass[k] for k in path.keys}


def structural_magnitude_spearman(
    path, base: Mapping[str, Tensor], tau: Mapping[str, Tensor]
) -> dict[str, float]:
    """Spearman ρ between the structural score ``|∂R/∂τ|`` and ``|τ|``, per tensor."""
    weights = {k: base[k].to(torch.float64) + tau[k].to(torch.float64) for k in path.keys}
    mass = path_mass(path, weights)
    out = {}
    for k in path.keys:
        a = mass[k].flatten().cpu().numpy()
        b = tau[k].detach().abs().flatten().double().cpu().numpy()
        if a.size < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
            continue
        out[k] = float(spearmanr(a, b).statistic)
    return out
