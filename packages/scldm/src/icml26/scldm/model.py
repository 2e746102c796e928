"""``ScLDM``: the scverse-style front end of scLDM (AnnData in, AnnData out).

::

    model = ScLDM(AutoencoderConfig(...), DiTConfig(...), TrainingConfig(...))
    model.fit(adata, layer="counts", condition_keys=("cell_type",))
    new = model.generate(500, {"cell_type": "B cell"}, guidance=1.0)   # AnnData of counts
    model.embed(adata, key_added="X_scldm")                            # adata.obsm
    model.save("scldm_model/"); model = ScLDM.load("scldm_model/")

Stage A trains the MCAB autoencoder on the negative-binomial likelihood; stage B
freezes it, encodes every training cell and trains the DiT by flow matching on the
latents. Generation integrates the guided ODE from noise, samples the library size
from the training statistics of the requested condition, decodes the full gene panel
and draws negative-binomial counts (official ``LatentDiffusion.sample``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from icml26.scldm.autoencoder import AutoencoderConfig, MCABAutoencoder
from icml26.scldm.data import (
    ConditionVocabulary,
    LibrarySizeModel,
    RowBatches,
    check_anndata,
    counts_matrix,
    dense_rows,
    library_sizes,
)
from icml26.scldm.diffusion import SOLVERS, Solver, flow_matching_loss, guided_velocity, solve_ode
from icml26.scldm.dit import DiT, DiTConfig
from icml26.scldm.likelihood import sample_negative_binomial
from icml26.scldm.training import EMA, OptimConfig, run_training
from icml26.shared import Plateau, barrier, is_main_process, numpy_rng, torch_generator

log = logging.getLogger(__name__)

FORMAT_VERSION = 1


def resolve_device(device: str | torch.device | None) -> torch.device:
    """``None`` -> CUDA when available, else CPU."""
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' was asked for but CUDA is not available")
    return dev


@dataclass(frozen=True)
class TrainingConfig:
    """Both training stages; defaults are the released ones (``vae_base``/``ldm_base``).

    Stage A: AdamW(1e-3, betas 0.9/0.95), WSD with sqrt decay over the last 10 %,
    batch 128, 100 epochs. Stage B: AdamW(5e-4), WSD with cosine decay, batch 128,
    EMA 0.9999 every 10 steps after step 10k. ``diffusion_steps`` overrides
    ``diffusion_epochs`` when set.

    ``autoencoder_max_steps`` switches stage A to the house convergence rule
    (:class:`icml26.shared.Plateau`): train until the mean reconstruction
    NLL of the training batches over a window (``autoencoder_window`` steps, default one
    epoch) has not improved by a relative ``autoencoder_min_delta`` for
    ``autoencoder_patience`` windows, then run the schedule's decay; at most
    ``autoencoder_max_steps`` steps (``autoencoder_epochs`` is then unused).

    ``diffusion_max_steps`` does the same for stage B on the flow-matching training loss:
    windows of ``diffusion_window`` steps (that loss is noisy: a fresh noise and time per
    cell), a relative ``diffusion_min_delta``, ``diffusion_patience`` windows; at most
    ``diffusion_max_steps`` steps (``diffusion_steps``/``diffusion_epochs`` are then unused).
    """

    autoencoder_epochs: int = 100
    autoencoder_batch_size: int = 128
    autoencoder_max_steps: int | None = None
    autoencoder_patience: int = 3
    autoencoder_min_delta: float = 1e-2
    autoencoder_window: int | None = None
    autoencoder_optim: OptimConfig = field(
        default_factory=lambda: OptimConfig(lr=1e-3, betas=(0.9, 0.95), decay="sqrt")
    )
    diffusion_epochs: int = 100
    diffusion_steps: int | None = None
    diffusion_batch_size: int = 128
    diffusion_max_steps: int | None = None
    diffusion_patience: int = 3
    diffusion_min_delta: float = 1e-2
    diffusion_window: int = 250
    diffusion_optim: OptimConfig = field(
        default_factory=lambda: OptimConfig(lr=5e-4, decay="cosine", decay_fraction=1.0)
    )
    ema_decay: float = 0.9999
    ema_update_every: int = 10
    ema_update_after_step: int = 10_000

    def __post_init__(self) -> None:
        for name in ("autoencoder_epochs", "autoencoder_batch_size", "diffusion_epochs"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        for name in (
            "diffusion_steps",
            "autoencoder_max_steps",
            "autoencoder_window",
            "diffusion_max_steps",
        ):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be positive, got {value}")
        if self.autoencoder_patience < 1 or not self.autoencoder_min_delta >= 0:
            raise ValueError("autoencoder_patience must be positive and autoencoder_min_delta >= 0")
        if self.diffusion_patience < 1 or self.diffusion_window < 1:
            raise ValueError("diffusion_patience and diffusion_window must be positive")
        if not 0 <= self.diffusion_min_delta < 1:
            raise ValueError(
                f"diffusion_min_delta must lie in [0, 1), got {self.diffusion_min_delta}"
            )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrainingConfig:
        data = dict(data)
        for key in ("autoencoder_optim", "diffusion_optim"):
            opt = dict(data[key])
            opt["betas"] = tuple(opt["betas"])
            data[key] = OptimConfig(**opt)
        return cls(**data)


class ScLDM:
    """Latent diffusion model for single-cell counts (scLDM).

    Parameters
    ----------
    autoencoder, diffusion, training
        Architecture of the MCAB autoencoder, of the DiT, and the training schedule.
    device
        torch device; default CUDA when available. Under ``accelerate launch`` the
        training loops use the device ``accelerate`` assigns to each process.
    """

    def __init__(
        self,
        autoencoder: AutoencoderConfig | None = None,
        diffusion: DiTConfig | None = None,
        training: TrainingConfig | None = None,
        *,
        device: str | torch.device | None = None,
    ):
        self.autoencoder_config = autoencoder or AutoencoderConfig()
        self.diffusion_config = diffusion or DiTConfig()
        self.training_config = training or TrainingConfig()
        self.device = resolve_device(device)
        self.var_names: list[str] = []
        self.vocabulary = ConditionVocabulary()
        self.library_model: LibrarySizeModel | None = None
        self.autoencoder: MCABAutoencoder | None = None
        self.dit: DiT | None = None
        self.ema: DiT | None = None
        # per-coordinate (m, D) shift and scale of the latents seen by the DiT
        self.latent_shift: torch.Tensor | None = None
        self.latent_scale: torch.Tensor | None = None
        self.history: dict[str, list[float]] = {}
        # the convergence rules of both stages: steps, reason ("plateau"/"cap"), best window
        self.autoencoder_stop: dict[str, Any] | None = None
        self.diffusion_stop: dict[str, Any] | None = None

    # -- state --------------------------------------------------------------------------
    @property
    def is_fitted(self) -> bool:
        return self.autoencoder is not None and self.dit is not None

    @property
    def condition_keys(self) -> list[str]:
        return self.vocabulary.keys

    def _require(self, what: str = "model") -> None:
        if self.autoencoder is None or (what == "model" and self.dit is None):
            raise RuntimeError(f"the {what} is not fitted: call fit() (or load()) first")

    def _gene_ids(self, var_names: Sequence[str] | None = None) -> torch.Tensor:
        """Vocabulary ids (1-based) of ``var_names`` (default: every training gene)."""
        if var_names is None:
            return torch.arange(1, len(self.var_names) + 1, device=self.device)
        index = {g: i + 1 for i, g in enumerate(self.var_names)}
        unknown = [g for g in var_names if g not in index]
        if unknown:
            raise ValueError(
                f"{len(unknown)} genes were not seen in training (e.g. {unknown[:5]}); "
                "subset the AnnData to the model's genes (model.var_names)"
            )
        return torch.tensor([index[g] for g in var_names], device=self.device)

    # -- training -----------------------------------------------------------------------
    def fit(
        self,
        adata: Any,
        *,
        layer: str | None = None,
        condition_keys: Sequence[str] = (),
        seed: int = 0,
    ) -> ScLDM:
        """Train both stages on the counts of ``adata`` (``.X`` or ``layer``).

        ``condition_keys`` are ``.obs`` columns to condition the diffusion on (cell
        type, tissue, perturbation, ...). Returns ``self``.
        """
        check_anndata(adata)
        ConditionVocabulary.from_obs(adata.obs, condition_keys)  # fail before any training
        self.fit_autoencoder(adata, layer=layer, seed=seed)
        self.fit_diffusion(adata, layer=layer, condition_keys=condition_keys, seed=seed)
        return self

    def fit_autoencoder(self, adata: Any, *, layer: str | None = None, seed: int = 0) -> ScLDM:
        """Stage A: the MCAB autoencoder on the NB likelihood (+ KL when variational).

        Sparse counts stay sparse: each mini-batch of rows is densified on its own."""
        counts = counts_matrix(adata, layer, keep_sparse=True)
        names = [str(g) for g in adata.var_names]
        if len(set(names)) != len(names):
            raise ValueError("adata.var_names must be unique (call adata.var_names_make_unique())")
        self.var_names = names
        cfg = self.training_config
        with torch.random.fork_rng(devices=[]):  # seeded initialisation, global RNG untouched
            torch.manual_seed(seed)
            ae = MCABAutoencoder(len(names), self.autoencoder_config).to(self.device)
        gene_ids = self._gene_ids()
        batch = cfg.autoencoder_batch_size
        per_epoch = max(counts.shape[0] // batch, 1)
        rule = None
        if cfg.autoencoder_max_steps is not None:  # convergence rule, with a step cap
            steps = cfg.autoencoder_max_steps
            rule = Plateau(
                window=cfg.autoencoder_window or per_epoch,
                patience=cfg.autoencoder_patience,
                min_delta=cfg.autoencoder_min_delta,
                cap=steps,
            )
        else:
            steps = cfg.autoencoder_epochs * per_epoch

        def step_loss(model, data, gen):
            out = model(data[0], gene_ids, gen)
            return out["loss"], out["nll"]  # the rule watches the reconstruction NLL

        self.history["autoencoder"] = run_training(
            ae,
            step_loss,
            [RowBatches(counts)],
            steps=steps,
            batch_size=batch,
            optim=cfg.autoencoder_optim,
            device=self.device,
            seed=seed,
            stop_rule=rule,
            desc="scLDM autoencoder",
        )
        if rule is not None:
            self.history["autoencoder_plateau"] = list(rule.windows)
            self.autoencoder_stop = rule.summary()
        self.autoencoder = ae.to(self.device).eval().requires_grad_(False)
        self.dit = self.ema = None
        return self

    def fit_diffusion(
        self,
        adata: Any,
        *,
        layer: str | None = None,
        condition_keys: Sequence[str] = (),
        seed: int = 0,
    ) -> ScLDM:
        """Stage B: the DiT on the latents of the frozen autoencoder."""
        self._require("autoencoder")
        if isinstance(condition_keys, str):
            condition_keys = (condition_keys,)
        counts = counts_matrix(adata, layer, keep_sparse=True)
        self._check_genes(adata)
        self.vocabulary = ConditionVocabulary.from_obs(adata.obs, condition_keys)
        codes = self.vocabulary.encode_obs(adata.obs)
        self.library_model = LibrarySizeModel.fit(
            library_sizes(counts), codes, self.vocabulary.keys
        )
        mean, logvar = self._encode_counts(counts, list(adata.var_names))
        cfg = self.training_config
        m, d = self.autoencoder.latent_shape
        if self.diffusion_config.standardize_latents:
            self.latent_shift = mean.mean(0)
            self.latent_scale = mean.std(0).clamp_min(1e-4)
        else:
            self.latent_shift = self.latent_scale = None
        shift, scale = self._latent_affine()
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed + 1)
            dit = DiT(m, d, self.vocabulary.sizes, self.diffusion_config).to(self.device)
        ema = EMA(
            dit,
            beta=cfg.ema_decay,
            update_every=cfg.ema_update_every,
            update_after_step=cfg.ema_update_after_step,
        )
        batch = cfg.diffusion_batch_size
        rule = None
        if cfg.diffusion_max_steps is not None:  # convergence rule, with a step cap
            steps = cfg.diffusion_max_steps
            rule = Plateau(
                window=min(cfg.diffusion_window, steps),
                patience=cfg.diffusion_patience,
                min_delta=cfg.diffusion_min_delta,
                cap=steps,
            )
        else:
            steps = cfg.diffusion_steps or cfg.diffusion_epochs * max(counts.shape[0] // batch, 1)
        keys = self.vocabulary.keys
        tensors = [mean, torch.from_numpy(codes)]
        if logvar is not None:
            tensors.append(logvar)

        def step_loss(model, data, gen):
            z1 = data[0]
            if len(data) == 3:  # variational: a fresh posterior draw each step
                eps = torch.randn(z1.shape, generator=gen, device=z1.device)
                z1 = z1 + torch.exp(0.5 * data[2]) * eps
            z1 = (z1 - shift.to(z1.device)) / scale.to(z1.device)
            cond = {k: data[1][:, j] for j, k in enumerate(keys)}
            return flow_matching_loss(model, z1, cond, gen)

        self.history["diffusion"] = run_training(
            dit,
            step_loss,
            tensors,
            steps=steps,
            batch_size=batch,
            optim=cfg.diffusion_optim,
            device=self.device,
            seed=seed + 1,
            ema=ema,
            stop_rule=rule,
            desc="scLDM diffusion",
        )
        self.diffusion_stop = None if rule is None else rule.summary()
        if rule is not None:
            self.history["diffusion_plateau"] = list(rule.windows)
        self.dit = dit.to(self.device).eval().requires_grad_(False)
        self.ema = ema.model.to(self.device)
        return self

    def _latent_affine(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(shift, scale) mapping autoencoder latents to the DiT's space: z' = (z - s) / c."""
        m, d = self.autoencoder.latent_shape
        if self.latent_shift is None or self.latent_scale is None:
            return torch.zeros(m, d), torch.ones(m, d)
        return self.latent_shift, self.latent_scale

    def with_diffusion(self, diffusion: DiTConfig) -> ScLDM:
        """A new model sharing this model's fitted (frozen) autoencoder, with another DiT
        configuration (e.g. the joint strategy for perturbations); call
        :meth:`fit_diffusion` on it."""
        self._require("autoencoder")
        other = ScLDM(self.autoencoder_config, diffusion, self.training_config, device=self.device)
        other.var_names, other.autoencoder = list(self.var_names), self.autoencoder
        return other

    def _check_genes(self, adata: Any) -> None:
        if [str(g) for g in adata.var_names] != self.var_names:
            raise ValueError("adata.var_names differ from the genes the autoencoder was trained on")

    # -- encoding -------------------------------------------------------------------------
    @torch.no_grad()
    def _encode_counts(
        self, counts: Any, var_names: Sequence[str], batch_size: int = 512
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Latent mean (and log-variance) of every cell (dense or CSR counts, densified
        ``batch_size`` rows at a time), on the CPU: (n, m, D)."""
        self._require("autoencoder")
        gene_ids = self._gene_ids(var_names)
        means, logvars = [], []
        for start in range(0, counts.shape[0], batch_size):
            rows = slice(start, start + batch_size)
            x = torch.from_numpy(dense_rows(counts, rows)).to(self.device)
            mean, logvar = self.autoencoder.encode(x, gene_ids)
            means.append(mean.cpu())
            if logvar is not None:
                logvars.append(logvar.cpu())
        return torch.cat(means), (torch.cat(logvars) if logvars else None)

    def embed(
        self,
        adata: Any,
        *,
        layer: str | None = None,
        key_added: str = "X_scldm",
        batch_size: int = 512,
        copy: bool = False,
    ) -> Any:
        """Write the flattened latent mean (n_obs, m·D) to ``adata.obsm[key_added]``.

        The genes of ``adata`` may be any subset of the training genes, in any order:
        the encoder is a set function of the expressed genes. Returns the AnnData when
        ``copy``, else None.
        """
        check_anndata(adata)
        self._require("autoencoder")
        if not key_added or not isinstance(key_added, str):
            raise ValueError(f"key_added must be a non-empty string, got {key_added!r}")
        counts = counts_matrix(adata, layer, keep_sparse=True)
        mean, _ = self._encode_counts(counts, [str(g) for g in adata.var_names], batch_size)
        target = adata.copy() if copy else adata
        target.obsm[key_added] = mean.flatten(1).numpy()
        m, d = self.autoencoder.latent_shape
        target.uns[key_added] = {"params": {"n_tokens": m, "latent_dim": d, "layer": layer}}
        return target if copy else None

    # -- generation ---------------------------------------------------------------------
    def _guidance_weights(self, guidance: float | Mapping[str, float], keys: Sequence[str]) -> dict:
        if isinstance(guidance, Mapping):
            extra = sorted(set(guidance) - set(keys))
            if extra:
                raise ValueError(
                    f"guidance given for {extra}, which are not requested conditions {list(keys)}"
                )
            weights = {k: float(guidance.get(k, 1.0)) for k in keys}
        else:
            weights = {k: float(guidance) for k in keys}
        if not all(np.isfinite(list(weights.values()))):
            raise ValueError(f"guidance weights must be finite, got {weights}")
        return weights

    @torch.no_grad()
    def sample_latents(
        self,
        n: int,
        conditions: Mapping[str, Any] | None = None,
        *,
        guidance: float | Mapping[str, float] = 1.0,
        solver: Solver = "dopri5",
        steps: int = 50,
        atol: float = 1e-5,
        rtol: float = 1e-5,
        seed: int = 0,
        batch_size: int = 1024,
        use_ema: bool = False,
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Latents (n, m, D) from the guided ODE and an info dict (NFE, weights)."""
        self._require()
        if not isinstance(n, int | np.integer) or n < 1:
            raise ValueError(f"n must be a positive integer, got {n!r}")
        if solver not in SOLVERS:
            raise ValueError(f"solver must be one of {SOLVERS}, got {solver!r}")
        codes = self.vocabulary.encode_request(conditions, int(n))
        weights = self._guidance_weights(guidance, list(codes))
        net = self.ema if use_ema and self.ema is not None else self.dit
        gen = torch_generator(seed, "latent-noise", device=self.device)
        m, d = self.autoencoder.latent_shape
        shift, scale = self._latent_affine()
        out, nfe = [], 0
        for start in range(0, n, batch_size):
            stop = min(start + batch_size, n)
            x0 = torch.randn((stop - start, m, d), generator=gen, device=self.device)
            cond = {k: torch.from_numpy(v[start:stop]).to(self.device) for k, v in codes.items()}

            def field(x, t, cond=cond):
                return guided_velocity(net, x, t, cond, weights)

            z, used = solve_ode(field, x0, solver=solver, steps=steps, atol=atol, rtol=rtol)
            z = z.cpu() * scale + shift  # back to the autoencoder's latent space
            out.append(z.numpy())
            nfe += used
        info = {"guidance": weights, "solver": solver, "steps": steps, "nfe": nfe, "seed": seed}
        return np.concatenate(out), info

    @torch.no_grad()
    def decode_latents(
        self,
        z: np.ndarray | torch.Tensor,
        library_size: np.ndarray,
        *,
        seed: int = 0,
        batch_size: int = 1024,
    ) -> np.ndarray:
        """NB counts (n, n_genes) drawn from the decoder at latents ``z`` (n, m, D)."""
        self._require("autoencoder")
        z = torch.as_tensor(np.asarray(z, dtype=np.float32))
        m, d = self.autoencoder.latent_shape
        if z.ndim == 2 and z.shape[1] == m * d:
            z = z.view(-1, m, d)
        if z.ndim != 3 or tuple(z.shape[1:]) != (m, d):
            raise ValueError(f"latents must be (n, {m}, {d}), got {tuple(z.shape)}")
        library = np.array(
            np.broadcast_to(np.asarray(library_size, dtype=np.float32), (z.shape[0],))
        )
        if not np.all(np.isfinite(library)) or library.min() <= 0:
            raise ValueError("library sizes must be positive and finite")
        gene_ids = self._gene_ids()
        rng = numpy_rng(seed, "nb-sample")
        out = []
        for start in range(0, len(z), batch_size):
            zb = z[start : start + batch_size].to(self.device)
            lib = torch.from_numpy(library[start : start + batch_size]).to(self.device)
            mu, theta = self.autoencoder.decode(zb, gene_ids, lib)
            out.append(sample_negative_binomial(mu.cpu().numpy(), theta.cpu().numpy(), rng))
        return np.concatenate(out)

    def sample_library_size(
        self, n: int, conditions: Mapping[str, Any] | None = None, *, seed: int = 0
    ) -> np.ndarray:
        """Library sizes drawn from the training statistics of the requested condition."""
        if self.library_model is None:
            raise RuntimeError("no library-size statistics: call fit() first")
        codes = self.vocabulary.encode_request(conditions, n)
        return self.library_model.sample(codes, self.vocabulary.keys, n, numpy_rng(seed, "library"))

    def generate(
        self,
        n: int,
        conditions: Mapping[str, Any] | None = None,
        *,
        guidance: float | Mapping[str, float] = 1.0,
        solver: Solver = "dopri5",
        steps: int = 50,
        atol: float = 1e-5,
        rtol: float = 1e-5,
        library_size: float | np.ndarray | None = None,
        seed: int = 0,
        batch_size: int = 1024,
        use_ema: bool = False,
    ) -> Any:
        """Generate ``n`` cells as an AnnData of counts.

        Parameters
        ----------
        conditions
            ``{obs key: value}`` (one value for all cells, or ``n`` values); keys
            left out are unconditioned. ``None``: unconditional generation.
        guidance
            Classifier-free guidance weight, one for all requested attributes or
            ``{key: weight}``; 0 gives the unconditional model, 1 the plain
            conditional one (released default).
        solver, steps, atol, rtol
            ODE solver: "dopri5" (adaptive, the released default), "heun" or
            "euler" with ``steps`` fixed steps.
        library_size
            Fixed library size(s); default: drawn per condition from training.

        Returns
        -------
        AnnData with counts in ``.X``, the conditions in ``.obs``, the latents in
        ``.obsm["X_scldm"]`` and the sampler settings in ``.uns["scldm_generation"]``.
        """
        import anndata as ad
        import pandas as pd

        z, info = self.sample_latents(
            n,
            conditions,
            guidance=guidance,
            solver=solver,
            steps=steps,
            atol=atol,
            rtol=rtol,
            seed=seed,
            batch_size=batch_size,
            use_ema=use_ema,
        )
        if library_size is None:
            library = self.sample_library_size(n, conditions, seed=seed)
        else:
            library = np.broadcast_to(np.asarray(library_size, dtype=np.float64), (n,))
        counts = self.decode_latents(z, library, seed=seed, batch_size=batch_size)
        codes = self.vocabulary.encode_request(conditions, n)
        obs = pd.DataFrame(index=[f"generated_{i}" for i in range(n)])
        for key, c in codes.items():
            obs[key] = pd.Categorical(
                self.vocabulary.decode(key, c), categories=self.vocabulary.categories[key]
            )
        obs["library_size"] = np.asarray(library, dtype=np.float64)
        adata = ad.AnnData(X=counts, obs=obs, var=pd.DataFrame(index=self.var_names))
        adata.obsm["X_scldm"] = z.reshape(n, -1)
        adata.uns["scldm_generation"] = info
        return adata

    @torch.no_grad()
    def reconstruct(self, adata: Any, *, layer: str | None = None, seed: int = 0) -> Any:
        """Encode the cells of ``adata`` and draw counts from the decoder (same library)."""
        import anndata as ad

        self._require("autoencoder")
        counts = counts_matrix(adata, layer, keep_sparse=True)
        self._check_genes(adata)
        mean, _ = self._encode_counts(counts, self.var_names)
        x = self.decode_latents(mean, library_sizes(counts), seed=seed)
        return ad.AnnData(X=x, obs=adata.obs.copy(), var=adata.var.copy())

    # -- persistence ----------------------------------------------------------------------
    def save(self, path: str | Path) -> Path:
        """Write ``config.json`` and ``model.safetensors`` into the folder ``path``.

        Under a launcher (``torchrun``, ``accelerate launch``) only the main process
        writes; the others wait at a barrier until the files are there.
        """
        self._require()
        path = Path(path)
        if is_main_process():
            self._write(path)
        barrier()
        return path

    def _write(self, path: Path) -> None:
        from safetensors.torch import save_file

        path.mkdir(parents=True, exist_ok=True)
        tensors = {}
        for prefix, module in (
            ("autoencoder", self.autoencoder),
            ("dit", self.dit),
            ("ema", self.ema),
        ):
            if module is None:
                continue
            for k, v in module.state_dict().items():
                tensors[f"{prefix}.{k}"] = v.detach().cpu().contiguous()
        if self.latent_shift is not None and self.latent_scale is not None:
            tensors["latent.shift"] = self.latent_shift.detach().cpu().contiguous()
            tensors["latent.scale"] = self.latent_scale.detach().cpu().contiguous()
        save_file(tensors, str(path / "model.safetensors"))
        config = {
            "format_version": FORMAT_VERSION,
            "autoencoder": self.autoencoder_config.to_dict(),
            "diffusion": self.diffusion_config.to_dict(),
            "training": asdict(self.training_config),
            "var_names": self.var_names,
            "conditions": self.vocabulary.to_dict(),
            "library_model": self.library_model.to_dict() if self.library_model else None,
        }
        (path / "config.json").write_text(json.dumps(config, indent=1))

    @classmethod
    def load(cls, path: str | Path, *, device: str | torch.device | None = None) -> ScLDM:
        """Load a model written by :meth:`save` (safetensors; nothing is unpickled)."""
        from safetensors.torch import load_file

        path = Path(path)
        cfg_file, weights = path / "config.json", path / "model.safetensors"
        if not cfg_file.is_file() or not weights.is_file():
            raise ValueError(
                f"{path} is not a saved ScLDM (needs config.json and model.safetensors)"
            )
        config = json.loads(cfg_file.read_text())
        if config.get("format_version") != FORMAT_VERSION:
            raise ValueError(f"unsupported format version {config.get('format_version')!r}")
        model = cls(
            AutoencoderConfig(**config["autoencoder"]),
            DiTConfig(**config["diffusion"]),
            TrainingConfig.from_dict(config["training"]),
            device=device,
        )
        model.var_names = list(config["var_names"])
        model.vocabulary = ConditionVocabulary(
            {k: list(v) for k, v in config["conditions"].items()}
        )
        if config["library_model"] is not None:
            model.library_model = LibrarySizeModel.from_dict(config["library_model"])
        state = load_file(str(weights), device="cpu")

        def part(prefix: str) -> dict[str, torch.Tensor]:
            return {k[len(prefix) + 1 :]: v for k, v in state.items() if k.startswith(prefix + ".")}

        ae = MCABAutoencoder(len(model.var_names), model.autoencoder_config)
        ae.load_state_dict(part("autoencoder"))
        model.autoencoder = ae.to(model.device).eval().requires_grad_(False)
        m, d = ae.latent_shape
        if "latent.shift" in state:
            model.latent_shift, model.latent_scale = state["latent.shift"], state["latent.scale"]
        for name in ("dit", "ema"):
            sub = part(name)
            if sub:
                net = DiT(m, d, model.vocabulary.sizes, model.diffusion_config)
                net.load_state_dict(sub)
                setattr(model, name, net.to(model.device).eval().requires_grad_(False))
        return model

    def __repr__(self) -> str:
        state = "fitted" if self.is_fitted else "not fitted"
        return (
            f"ScLDM({state}; {len(self.var_names)} genes, conditions {self.condition_keys}, "
            f"latent {self.autoencoder_config.n_latent_tokens}×"
            f"{self.autoencoder_config.latent_dim}, "
            f"device {self.device})"
        )
