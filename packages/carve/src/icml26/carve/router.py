"""The CARvE router: a query tower, a growing registry of model embeddings, cosine / τ.

Official code ``core/carve/model_selection_carve/router.py``:

    z(q) = h(q) W / ||h(q) W||,    e(m) = v(m) / ||v(m)||,    s(q, m) = z(q)ᵀ e(m) / τ,  τ = 0.08

with ``W = Linear(d_backbone -> d, bias=False)`` and one learnable row ``v(m)`` per model
ID (``nn.Embedding``, xavier-uniform init). New experiences *append* rows
(``router_registry_init_mode: extend``); old ids keep their index. Prediction is the
argmax over every model registered so far.

CPU variant (reconstructed): ``h(q)`` is a frozen sentence embedding passed through a
residual MLP ``adapter`` that plays the part of the LoRA adapters (trained with the
adapter learning rate, never anchored); its output layer starts at zero, like LoRA's B.

Inference keeps the normalised registry e(m) cached; the cache is keyed on the version
counter of the embedding table and dropped by :meth:`CarveRouter.register`, a loaded
state, a device move and every ``train()`` / ``eval()`` call. PyTorch's fused optimizers
(``AdamW(..., fused=True)``) write the parameters in place *without* bumping the version
counter, so after such a step call :meth:`CarveRouter.invalidate_cache` (the package's
trainer does so after every step); plain and ``foreach`` optimizers bump it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


class UnknownModelError(ValueError):
    """A model id that the registry does not hold (never silently dropped)."""


def default_device(device: str | torch.device | None = None) -> torch.device:
    """``device`` if given, else CUDA when available, else CPU."""
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


class Adapter(nn.Module):
    """h = x + B·GELU(A·x), B = 0 at init (a LoRA-like residual; reconstructed)."""

    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.down = nn.Linear(dim, hidden)
        self.up = nn.Linear(hidden, dim, bias=False)
        nn.init.zeros_(self.up.weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.up(F.gelu(self.down(x)))


class CarveRouter(nn.Module):
    """Query tower + model registry. ``model_ids`` maps registry rows to hub ids."""

    def __init__(
        self,
        input_dim: int,
        embedding_dim: int = 256,
        *,
        tau: float = 0.08,
        adapter_hidden: int = 256,
        generator: torch.Generator | None = None,
        backbone: nn.Module | None = None,
    ) -> None:
        """``backbone`` (optional, e.g. :class:`~icml26.carve.lora.TransformerBackbone`)
        replaces the adapter: the query tower becomes projection(backbone(x))."""
        super().__init__()
        if input_dim < 1 or embedding_dim < 1:
            raise ValueError(f"dimensions must be positive, got {input_dim}, {embedding_dim}")
        if not tau > 0:
            raise ValueError(f"tau must be positive, got {tau}")
        self.input_dim, self.embedding_dim, self.tau = input_dim, embedding_dim, float(tau)
        self.adapter_hidden = adapter_hidden
        self.has_backbone = backbone is not None
        if backbone is not None:
            self.adapter, self.adapter_hidden = backbone, 0
            hidden_dim = int(backbone.output_dim)
        else:
            self.adapter = (
                Adapter(input_dim, adapter_hidden) if adapter_hidden > 0 else nn.Identity()
            )
            hidden_dim = input_dim
        self.projection = nn.Linear(hidden_dim, embedding_dim, bias=False)
        self.model_embeddings = nn.Embedding(0, embedding_dim)
        with torch.no_grad():
            if backbone is None and adapter_hidden > 0:
                bound = 1.0 / np.sqrt(input_dim)
                self.adapter.down.weight.uniform_(-bound, bound, generator=generator)
                self.adapter.down.bias.uniform_(-bound, bound, generator=generator)
            _xavier_(self.projection.weight, generator)
        self.model_ids: list[str] = []
        self._index: dict[str, int] = {}
        self._registry_cache: tuple[tuple, torch.Tensor] | None = None

    # -- registry ---------------------------------------------------------------------
    @property
    def num_models(self) -> int:
        return len(self.model_ids)

    def register(self, model_ids: Sequence[str], generator: torch.Generator | None = None) -> None:
        """Append one xavier-uniform row per new id (``extend`` mode); old rows are kept."""
        ids = [str(m) for m in model_ids]
        dup = [m for m in ids if m in self._index]
        if dup or len(set(ids)) != len(ids):
            raise ValueError(f"model ids already registered or repeated: {dup[:5] or ids[:5]}")
        old = self.model_embeddings.weight.detach()
        fresh = torch.empty(len(ids), self.embedding_dim, device=old.device, dtype=old.dtype)
        # xavier-uniform over the (grown) table, as the official code initialises it
        bound = float(np.sqrt(6.0 / (len(self.model_ids) + len(ids) + self.embedding_dim)))
        fresh.uniform_(-bound, bound, generator=generator)
        table = nn.Embedding(len(self.model_ids) + len(ids), self.embedding_dim)
        table.weight.data = torch.cat([old, fresh]).to(old.device)
        self.model_embeddings = table
        self.invalidate_cache()
        for m in ids:
            self._index[m] = len(self.model_ids)
            self.model_ids.append(m)

    def indices(self, model_ids: str | Sequence[str]) -> torch.Tensor:
        """Registry rows of model ids; an unknown id raises :class:`UnknownModelError`."""
        ids = [model_ids] if isinstance(model_ids, str) else list(model_ids)
        missing = [m for m in ids if m not in self._index]
        if missing:
            raise UnknownModelError(
                f"model id(s) not in the registry: {missing[:5]} "
                f"({self.num_models} registered); register them before routing to them"
            )
        return torch.tensor([self._index[m] for m in ids], dtype=torch.long)

    # -- scoring ----------------------------------------------------------------------
    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """Unnormalised query vectors h(q)W, (B, d)."""
        if x.ndim != 2 or x.shape[1] != self.input_dim:
            raise ValueError(
                f"expected queries of shape (B, {self.input_dim}), got {tuple(x.shape)}"
            )
        return self.projection(self.adapter(x))

    def forward(self, x: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
        """Training logits over candidate sets (see :meth:`candidate_logits`)."""
        return self.candidate_logits(x, candidates)

    def candidate_logits(self, x: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
        """s(q, m) for each row's candidate set: (B, K) from queries (B, D), ids (B, K).

        Computed as the (B, n) cosines against the normalised rows up to the largest
        candidate id, then gathered: the same values as normalising the (B, K, d)
        gathered rows, at a fraction of the cost (and of its backward) when B x K
        exceeds the registry size. Rows are normalised by :func:`unit` (x · rsqrt(|x|²)),
        whose backward costs about half of ``F.normalize``'s on a 2,000-row table."""
        z = unit(self.encode(x))
        if candidates.numel() == 0:
            return z.new_zeros(candidates.shape)
        n = int(candidates.max()) + 1
        e = unit(self.model_embeddings.weight[:n])
        return (z @ e.T).gather(1, candidates) / self.tau

    def normalized_registry(self, n_models: int | None = None) -> torch.Tensor:
        """Unit rows e(m) of the first ``n_models`` registered models.

        Differentiable while training; in inference (no grad) a cached, detached copy is
        returned, rebuilt whenever the table has changed since it was made.
        """
        w = self.model_embeddings.weight
        if torch.is_grad_enabled() and w.requires_grad:
            return F.normalize(w if n_models is None else w[:n_models], dim=-1)
        key = (id(w), w._version, w.device, w.dtype, tuple(w.shape))
        if self._registry_cache is None or self._registry_cache[0] != key:
            self._registry_cache = (key, F.normalize(w.detach(), dim=-1))
        reg = self._registry_cache[1]
        return reg if n_models is None else reg[:n_models]

    def invalidate_cache(self) -> None:
        """Drop the cached normalised registry (done on register, load, mode switches and
        after every step of the package's trainer). Needed after an in-place update that
        does not bump the table's version counter, such as a fused optimizer's step."""
        self._registry_cache = None

    def train(self, mode: bool = True):  # eval() calls train(False)
        self.invalidate_cache()
        return super().train(mode)

    def _apply(self, fn, recurse: bool = True):  # .to(), .cuda(), .half() move the table
        self.invalidate_cache()
        return super()._apply(fn, recurse)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        self.invalidate_cache()
        return super().load_state_dict(state_dict, strict=strict, assign=assign)

    @torch.no_grad()
    def scores(self, x: torch.Tensor | np.ndarray, n_models: int | None = None) -> torch.Tensor:
        """Scores against every registered model (or the first ``n_models``), (B, M)."""
        x = self._as_input(x).to(self.projection.weight.device)
        z = F.normalize(self.encode(x), dim=-1)
        return z @ self.normalized_registry(n_models).T / self.tau

    @torch.no_grad()
    def predict(
        self, x: torch.Tensor | np.ndarray, *, n_models: int | None = None, batch_size: int = 4096
    ) -> np.ndarray:
        """Argmax registry index per query, over all models registered so far."""
        if self.num_models == 0:
            raise ValueError("the registry is empty: register models before routing")
        n = self.num_models if n_models is None else int(n_models)
        if not 1 <= n <= self.num_models:
            raise ValueError(f"n_models must lie in [1, {self.num_models}], got {n_models}")
        param = self.projection.weight
        x = self._as_input(x)
        reg = self.normalized_registry(n)
        out = []
        for start in range(0, x.shape[0], batch_size):
            xb = x[start : start + batch_size].to(param.device)
            z = F.normalize(self.encode(xb), dim=-1)
            out.append((z @ reg.T).argmax(dim=1).cpu())
        if not out:
            return np.zeros(0, dtype=np.int64)
        return torch.cat(out).numpy().astype(np.int64)

    def _as_input(self, x: torch.Tensor | np.ndarray) -> torch.Tensor:
        """Checked queries: float features in the parameters' dtype, or token ids for a
        transformer backbone. Non-finite or all-zero feature rows are an error: they
        would route to an arbitrary model (row 0) instead of failing."""
        x = check_features(x, self.input_dim, has_backbone=self.has_backbone)
        if x.is_floating_point():
            x = x.to(self.projection.weight.dtype)
        return x

    def route(
        self, x: torch.Tensor | np.ndarray, candidates: Sequence[str] | None = None
    ) -> list[str]:
        """The model id chosen for each query, among ``candidates`` (ids) or all models."""
        if candidates is None:
            return [self.model_ids[i] for i in self.predict(x)]
        if isinstance(candidates, str):
            raise TypeError("candidates must be a sequence of model ids, not a single string")
        if len(candidates) == 0:
            raise ValueError("candidates is empty: give at least one model id, or None for all")
        rows = self.indices(candidates)
        with torch.no_grad():
            param = self.projection.weight
            xt = self._as_input(x).to(param.device)
            z = F.normalize(self.encode(xt), dim=-1)
            e = self.normalized_registry()[rows.to(param.device)]
            best = (z @ e.T).argmax(dim=1).cpu().numpy()
        return [self.model_ids[int(rows[i])] for i in best]

    # -- checkpoints ------------------------------------------------------------------
    def config(self) -> dict[str, Any]:
        return {
            "input_dim": self.input_dim,
            "embedding_dim": self.embedding_dim,
            "tau": self.tau,
            "adapter_hidden": self.adapter_hidden,
            "model_ids": list(self.model_ids),
        }

    def save(self, directory: str | Path) -> Path:
        """``router.safetensors`` + ``router.json`` (config and registry ids)."""
        from safetensors.torch import save_file

        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        tensors = {k: v.detach().cpu().contiguous() for k, v in self.state_dict().items()}
        save_file(tensors, str(directory / "router.safetensors"))
        (directory / "router.json").write_text(json.dumps(self.config(), indent=2))
        return directory

    @classmethod
    def load(
        cls,
        directory: str | Path,
        device: str | torch.device | None = None,
        backbone: nn.Module | None = None,
    ) -> CarveRouter:
        """A router saved by :meth:`save`; a LoRA router needs its ``backbone`` again."""
        from safetensors.torch import load_file

        directory = Path(directory)
        try:
            cfg = json.loads((directory / "router.json").read_text())
            ids = cfg.pop("model_ids")
        except (OSError, json.JSONDecodeError, KeyError) as err:
            raise ValueError(f"{directory} holds no router checkpoint: {err}") from err
        router = cls(**cfg, backbone=backbone)
        router.register(ids)
        state = load_file(str(directory / "router.safetensors"))
        router.load_state_dict(state)
        return router.to(default_device(device))


def check_features(
    x: torch.Tensor | np.ndarray, input_dim: int | None = None, *, has_backbone: bool = False
) -> torch.Tensor:
    """``x`` as a tensor, or a clear error for input no router can route.

    Float rows must be finite and not all zero; integer rows are token ids, accepted
    only by a router with a transformer backbone.
    """
    if not isinstance(x, torch.Tensor | np.ndarray):
        raise TypeError(f"queries must be a torch.Tensor or numpy array, got {type(x).__name__}")
    x = torch.as_tensor(x)
    if x.dtype == torch.bool or x.is_complex():
        raise TypeError(f"queries must be float features or integer token ids, got {x.dtype}")
    if x.ndim != 2 or (input_dim is not None and x.shape[1] != input_dim):
        want = f"(B, {input_dim})" if input_dim is not None else "(B, D)"
        raise ValueError(f"expected queries of shape {want}, got {tuple(x.shape)}")
    if not x.is_floating_point():
        if not has_backbone:
            raise TypeError(
                f"integer queries ({x.dtype}) are token ids, which need a router built with "
                "a transformer backbone; encode the texts into float features first"
            )
        return x
    if x.numel():
        bad = ~torch.isfinite(x).all(dim=1)
        if bool(bad.any()):
            rows = torch.nonzero(bad).flatten()[:5].tolist()
            raise ValueError(f"queries hold NaN or inf values (rows {rows}); nothing to route")
        zero = (x == 0).all(dim=1)
        if bool(zero.any()):
            rows = torch.nonzero(zero).flatten()[:5].tolist()
            raise ValueError(
                f"queries have all-zero feature rows (rows {rows}): e.g. a text with no "
                "token the encoder knows; they carry no routing signal"
            )
    return x


def unit(x: torch.Tensor, eps: float = 1e-12) -> torch.Tensor:
    """Rows of ``x`` scaled to unit L2 norm: ``F.normalize(x, dim=-1)`` (the same values,
    the norm clamped at ``eps``), written as x · rsqrt(max(|x|², eps²)) for a cheaper
    backward pass."""
    return x * torch.rsqrt((x * x).sum(-1, keepdim=True).clamp_min(eps * eps))


def _xavier_(w: torch.Tensor, generator: torch.Generator | None) -> None:
    bound = float(np.sqrt(6.0 / (w.shape[0] + w.shape[1])))
    w.uniform_(-bound, bound, generator=generator)
