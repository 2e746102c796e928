"""DITING: embedding → OT health prototype → tri-coupled oscillators → linear head.

``Diting(config)(cycle_curve_data [B, T, C, S], curve_attn_mask [B, T]) -> [B, 1]`` is the
interface of the authors' pseudocode, with BatteryLife's config names
(``early_cycle_threshold`` T, ``charge_discharge_length`` S, ``num_var`` C) and
``diting_prototype_cycles`` K. The head is ``nn.Linear(T, 1)`` on the discrepancy energy; the
loss (BatteryLife style, reconstructed) is MSE on the standardised life label, optionally
weighted by DenseWeight's KDE weights (:func:`icml26.diting.training.dense_weights`).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import torch
from torch import nn

from icml26.diting.embedding import CycleEmbedding
from icml26.diting.manifestation import TriCoupledOscillators
from icml26.diting.prototype import HealthPrototype

__all__ = ["Diting", "DitingConfig", "check_inputs", "load_model", "save_model"]


@dataclass(frozen=True)
class DitingConfig:
    """The model's knobs; every constant after ``num_var`` is reconstructed (withheld)."""

    early_cycle_threshold: int = 100  # T
    charge_discharge_length: int = 300  # S
    num_var: int = 3  # C
    diting_prototype_cycles: int = 8  # K
    positional: bool = False
    embedding_init: str = "identity"  # "identity" | "default" (torch's uniform)
    prototype: str = "medoid"  # "medoid" | "mean" (ablation)
    tau: float = 0.2
    learn_tau: bool = False
    sinkhorn_reg: float = 0.05
    sinkhorn_iter: int = 100
    sinkhorn_tol: float = 1e-5
    debias: bool = True
    spectral_bins: int | None = 32
    detach_prototype: bool = False
    amplitude: float = 1.0  # A
    omega: float = 2 * math.pi  # ω
    kappa: float = 1.0  # κ
    damping: float = 1.0  # c
    phi: str = "tanh"
    dt: float | None = None  # None: 1 / T
    readout: str = "pair"  # "pair" (‖x_L + x_R‖²) | "single" (‖x_L‖², ablation)
    normalise: str = "log"  # "none" | "dim" | "log1p" | "log"; a deviation unless "none"
    learnable_constants: bool = False

    def __post_init__(self) -> None:
        for name in ("early_cycle_threshold", "charge_discharge_length", "num_var"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.diting_prototype_cycles < 1:
            raise ValueError(
                f"diting_prototype_cycles must be >= 1, got {self.diting_prototype_cycles}"
            )
        if self.diting_prototype_cycles > self.early_cycle_threshold:
            raise ValueError(
                f"diting_prototype_cycles K = {self.diting_prototype_cycles} exceeds "
                f"early_cycle_threshold T = {self.early_cycle_threshold}"
            )


def check_inputs(curves: torch.Tensor, mask: torch.Tensor, T: int, C: int, S: int) -> None:
    """Clear errors at the boundary: rank, shapes, C ≠ num_var, mask length, NaN."""
    if not isinstance(curves, torch.Tensor) or not isinstance(mask, torch.Tensor):
        raise TypeError(
            f"cycle_curve_data and curve_attn_mask must be torch tensors, got "
            f"{type(curves).__name__} and {type(mask).__name__}"
        )
    if curves.ndim != 4:
        raise ValueError(
            f"cycle_curve_data must be [B, T, C, S] (rank 4), got shape {tuple(curves.shape)}"
        )
    B, t, c, s = curves.shape
    if c != C:
        raise ValueError(f"cycle_curve_data has C = {c} channels, the config's num_var is {C}")
    if t != T or s != S:
        raise ValueError(
            f"cycle_curve_data is [B, {t}, {c}, {s}]; the config expects T = {T}, S = {S}"
        )
    if mask.shape != (B, T):
        raise ValueError(f"curve_attn_mask must be [B, T] = [{B}, {T}], got {tuple(mask.shape)}")
    if not bool(torch.isfinite(curves).all()):
        raise ValueError("cycle_curve_data holds NaN or inf values")


class Diting(nn.Module):
    """The DITING model (module order and equations from the authors' pseudocode)."""

    def __init__(self, config: DitingConfig | None = None):
        super().__init__()
        self.config = config = config or DitingConfig()
        T, C, S = config.early_cycle_threshold, config.num_var, config.charge_discharge_length
        self.embedding = CycleEmbedding(
            T, C, S, positional=config.positional, init=config.embedding_init
        )
        self.prototype = HealthPrototype(
            config.diting_prototype_cycles,
            kind=config.prototype,
            tau=config.tau,
            learn_tau=config.learn_tau,
            reg=config.sinkhorn_reg,
            n_bins=config.spectral_bins,
            max_iter=config.sinkhorn_iter,
            tol=config.sinkhorn_tol,
            debias=config.debias,
            detach=config.detach_prototype,
        )
        self.manifestation = TriCoupledOscillators(
            amplitude=config.amplitude,
            omega=config.omega,
            kappa=config.kappa,
            damping=config.damping,
            phi=config.phi,
            dt=config.dt,
            readout=config.readout,
            normalise=config.normalise,
            learnable=config.learnable_constants,
        )
        self.head = nn.Linear(T, 1)
        self.last_converged: torch.Tensor | None = None

    def forward(
        self, cycle_curve_data: torch.Tensor, curve_attn_mask: torch.Tensor
    ) -> torch.Tensor:
        cfg = self.config
        check_inputs(
            cycle_curve_data,
            curve_attn_mask,
            cfg.early_cycle_threshold,
            cfg.num_var,
            cfg.charge_discharge_length,
        )
        mask = curve_attn_mask.to(cycle_curve_data.dtype)
        x = self.embedding(cycle_curve_data * mask[:, :, None, None])  # nothing past the window
        proto = self.prototype(x, mask)
        self.last_converged = proto.converged.detach()
        energy = self.manifestation(proto.residual, mask)
        return self.head(energy)

    @torch.no_grad()
    def energy(self, cycle_curve_data: torch.Tensor, curve_attn_mask: torch.Tensor) -> torch.Tensor:
        """The discrepancy energy ``E [B, T]`` the head reads."""
        mask = curve_attn_mask.to(cycle_curve_data.dtype)
        x = self.embedding(cycle_curve_data * mask[:, :, None, None])
        return self.manifestation(self.prototype(x, mask).residual, mask)


def save_model(model: nn.Module, directory: str | Path, *, extra: dict | None = None) -> Path:
    """``model.safetensors`` + ``config.json`` (the DitingConfig, and ``extra``)."""
    from safetensors.torch import save_file

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(directory / "model.safetensors"))
    payload = {"config": asdict(model.config), **(extra or {})}
    (directory / "config.json").write_text(json.dumps(payload, indent=2))
    return directory


def load_model(directory: str | Path) -> tuple[Diting, dict]:
    """The model and the extra entries of ``config.json`` (no pickle involved)."""
    from safetensors.torch import load_file

    directory = Path(directory)
    payload = json.loads((directory / "config.json").read_text())
    known = {f.name for f in fields(DitingConfig)}
    config = DitingConfig(**{k: v for k, v in payload.pop("config").items() if k in known})
    model = Diting(config)
    model.load_state_dict(load_file(str(directory / "model.safetensors")))
    return model, payload
