"""The comparisons of the paper, on the same AnnData, budget and seeds as scLDM.

- :class:`MLPVAE`: the non-exchangeable baseline, an scVI-style MLP VAE over the
  ordered gene vector (official ``nnets.EncoderScvi``/``DecoderScvi``,
  ``stochastic_layers.GaussianLinearLayer``/``NegativeBinomialLinearLayer``),
  sampled from its N(0, I) prior;
- :class:`GaussianPriorScLDM`: the ablation of the paper — the *same* MCAB
  autoencoder as a fitted :class:`~icml26.scldm.model.ScLDM`, but latents drawn from
  a Gaussian prior N(0, I) instead of the latent diffusion model;
- :class:`ScviBaseline`: scVI from ``scvi-tools`` (extra ``scvi``), the peer users pick;
  generation by z ~ N(0, I) through its decoder.

Conditional generation for the Gaussian-prior models (reconstructed; none of them has a
class-conditional prior): :class:`LatentGaussianConditioner` fits a Gaussian to the
latent means of the training cells of the requested class; for a combination of
classes never seen together (held-out perturbations) it composes the mean additively
(latent arithmetic, as scGen: global mean + Σ_k class-k shift).

All generators return AnnData with counts in ``.X`` and the requested conditions in
``.obs``; library sizes come from :class:`~icml26.scldm.data.LibrarySizeModel`, as
for scLDM.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from icml26.scldm.data import (
    BackedCounts,
    ConditionVocabulary,
    LibrarySizeModel,
    RowBatches,
    check_anndata,
    counts_matrix,
    dense_rows,
    library_sizes,
)
from icml26.scldm.likelihood import nb_log_prob, sample_negative_binomial
from icml26.scldm.model import ScLDM, resolve_device
from icml26.scldm.training import OptimConfig, run_training
from icml26.shared import Plateau, numpy_rng, quiet_dependencies

log = logging.getLogger(__name__)


# -- conditional latent Gaussians --------------------------------------------------------
class LatentGaussianConditioner:
    """Class-conditional Gaussians over training latents (reconstructed baseline device)."""

    def __init__(
        self, latents: np.ndarray, codes: np.ndarray, keys: Sequence[str], *, ridge: float = 1e-4
    ):
        self.latents = np.asarray(latents, dtype=np.float64).reshape(len(latents), -1)
        self.codes, self.keys, self.ridge = np.asarray(codes), list(keys), ridge
        self.mean = self.latents.mean(0)

    def _gaussian(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        z = self.latents[rows]
        cov = np.cov(z, rowvar=False) if len(z) > 1 else np.zeros((z.shape[1],) * 2)
        return z.mean(0), np.atleast_2d(cov) + self.ridge * np.eye(z.shape[1])

    def _design(self, codes: np.ndarray, cols: list[int]) -> np.ndarray:
        """Intercept + one-hot class indicators of the attributes ``cols``."""
        blocks = [np.ones((len(codes), 1))]
        for j, col in enumerate(cols):
            n_classes = int(self.codes[:, col].max()) + 1
            blocks.append(np.eye(n_classes)[codes[:, j]])
        return np.hstack(blocks)

    def _additive_mean(self, cols: list[int], combo: np.ndarray) -> np.ndarray:
        """Least-squares fit of z ≈ b + Σ_k effect_k[class_k] on the training latents,
        evaluated at an unseen combination (scGen-style vector arithmetic)."""
        design = self._design(self.codes[:, cols], cols)
        coef, *_ = np.linalg.lstsq(design, self.latents, rcond=None)
        return (self._design(np.asarray(combo)[None], cols) @ coef)[0]

    def sample(
        self, codes: Mapping[str, np.ndarray], n: int, rng: np.random.Generator
    ) -> np.ndarray:
        """Latents for ``n`` cells with requested class indices ``codes`` (non-empty)."""
        given = [k for k in self.keys if k in codes]
        if not given:
            raise ValueError("LatentGaussianConditioner needs at least one condition")
        req = np.stack([codes[k] for k in given], axis=1)
        cols = [self.keys.index(k) for k in given]
        out = np.zeros((n, self.latents.shape[1]))
        for combo in np.unique(req, axis=0):
            sel = np.all(req == combo, axis=1)
            rows = np.flatnonzero(np.all(self.codes[:, cols] == combo, axis=1))
            if len(rows) >= 2:
                mean, cov = self._gaussian(rows)
            else:  # never seen together: additive class effects (latent arithmetic)
                mean = self._additive_mean(cols, combo)
                _, cov = self._gaussian(np.flatnonzero(self.codes[:, cols[0]] == combo[0]))
            out[sel] = rng.multivariate_normal(mean, cov, size=int(sel.sum()), method="cholesky")
        return out


def _generated_anndata(
    counts: np.ndarray,
    var_names: Sequence[str],
    vocab: ConditionVocabulary,
    codes: Mapping[str, np.ndarray],
    library: np.ndarray,
    latents: np.ndarray,
) -> Any:
    import anndata as ad
    import pandas as pd

    n = len(counts)
    obs = pd.DataFrame(index=[f"generated_{i}" for i in range(n)])
    for key, c in codes.items():
        obs[key] = pd.Categorical(vocab.decode(key, c), categories=vocab.categories[key])
    obs["library_size"] = np.asarray(library, dtype=np.float64)
    adata = ad.AnnData(
        X=counts.astype(np.float32), obs=obs, var=pd.DataFrame(index=list(var_names))
    )
    adata.obsm["X_latent"] = np.asarray(latents, dtype=np.float32).reshape(n, -1)
    return adata


def _condition_models(
    adata: Any, counts: Any, condition_keys: Sequence[str], latent: Any
) -> tuple[ConditionVocabulary, LibrarySizeModel, LatentGaussianConditioner | None]:
    """What a Gaussian-latent baseline needs for conditional generation: the condition
    vocabulary of ``adata.obs``, per-condition library sizes, and class latent Gaussians
    over ``latent()`` (called only when there are conditions)."""
    vocabulary = ConditionVocabulary.from_obs(adata.obs, condition_keys)
    codes = vocabulary.encode_obs(adata.obs)
    library = LibrarySizeModel.fit(library_sizes(counts), codes, vocabulary.keys)
    conditioner = (
        LatentGaussianConditioner(latent(), codes, vocabulary.keys) if vocabulary.keys else None
    )
    return vocabulary, library, conditioner


# -- the MLP VAE ---------------------------------------------------------------------------
class MLPVAEModule(nn.Module):
    """scVI-style VAE over the ordered gene vector (official ``ScviVAE``).

    Encoder: log1p(x) -> [Linear, BatchNorm, SiLU, Dropout] × L -> (loc, log-scale
    clipped to [-7, 5]). Decoder: z -> [Linear, BatchNorm, SiLU, Dropout] × L ->
    ``mu = softmax(Linear) · library``, per-gene ``theta = softplus(θ)``.
    Loss: −log NB(x | mu, theta) summed over genes + KL(q(z|x) ‖ N(0, I)).
    """

    def __init__(
        self,
        n_genes: int,
        *,
        n_hidden: int = 128,
        n_layers: int = 2,
        n_latent: int = 10,
        dropout: float = 0.1,
        kl_weight: float = 1.0,
    ):
        super().__init__()

        def mlp(n_in: int) -> nn.Sequential:
            layers: list[nn.Module] = []
            for i in range(n_layers):
                layers += [
                    nn.Linear(n_in if i == 0 else n_hidden, n_hidden),
                    nn.BatchNorm1d(n_hidden),
                    nn.SiLU(),
                    nn.Dropout(dropout),
                ]
            return nn.Sequential(*layers)

        self.encoder, self.decoder = mlp(n_genes), mlp(n_latent)
        self.loc = nn.Linear(n_hidden, n_latent)
        self.log_scale = nn.Linear(n_hidden, n_latent)
        self.mu_logits = nn.Linear(n_hidden, n_genes)
        self.theta = nn.Parameter(torch.ones(n_genes))
        self.kl_weight, self.n_latent = kl_weight, n_latent

    def encode(self, counts: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.encoder(torch.log1p(counts))
        return self.loc(h), torch.exp(F.hardtanh(self.log_scale(h), -7.0, 5.0))

    def decode(self, z: torch.Tensor, library: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mu = torch.softmax(self.mu_logits(self.decoder(z)), dim=-1) * library.reshape(-1, 1)
        return mu, F.softplus(self.theta).expand_as(mu)

    def forward(
        self, counts: torch.Tensor, generator: torch.Generator | None = None
    ) -> torch.Tensor:
        loc, scale = self.encode(counts)
        z = loc + scale * torch.randn(loc.shape, generator=generator, device=loc.device)
        mu, theta = self.decode(z, counts.sum(1, keepdim=True))
        nll = -nb_log_prob(counts, mu, theta).sum(1).mean()
        kl = 0.5 * (loc.square() + scale.square() - 1 - 2 * torch.log(scale)).sum(1).mean()
        return nll + self.kl_weight * kl


class MLPVAE:
    """Fit/generate/embed front end of :class:`MLPVAEModule` (AnnData in, AnnData out).

    ``patience`` switches training to the convergence rule (:class:`icml26.shared.Plateau`
    on the training ELBO, one epoch per window, relative ``min_delta``) with ``epochs`` as
    the cap; without it ``epochs`` is a fixed budget. ``stop`` records the rule's summary.
    Sparse (CSR) and backed counts stay so: training densifies one mini-batch of rows at a
    time, encoding ``chunk_rows`` rows at a time.
    """

    chunk_rows: int = 512

    def __init__(
        self,
        *,
        n_hidden: int = 128,
        n_layers: int = 2,
        n_latent: int = 10,
        dropout: float = 0.1,
        kl_weight: float = 1.0,
        epochs: int = 100,
        batch_size: int = 128,
        lr: float = 1e-3,
        patience: int | None = None,
        min_delta: float = 1e-2,
        device: str | torch.device | None = None,
    ):
        if epochs < 1 or batch_size < 1:
            raise ValueError("epochs and batch_size must be positive")
        if patience is not None and patience < 1:
            raise ValueError(f"patience must be positive, got {patience}")
        self.patience, self.min_delta = patience, min_delta
        self.stop: dict[str, Any] | None = None
        self.arch = {
            "n_hidden": n_hidden,
            "n_layers": n_layers,
            "n_latent": n_latent,
            "dropout": dropout,
            "kl_weight": kl_weight,
        }
        self.epochs, self.batch_size, self.lr = epochs, batch_size, lr
        self.device = resolve_device(device)
        self.module: MLPVAEModule | None = None
        self.var_names: list[str] = []
        self.vocabulary = ConditionVocabulary()
        self.library_model: LibrarySizeModel | None = None
        self.conditioner: LatentGaussianConditioner | None = None

    def fit(
        self,
        adata: Any,
        *,
        layer: str | None = None,
        condition_keys: Sequence[str] = (),
        seed: int = 0,
    ) -> MLPVAE:
        # sparse and backed counts stay so: one mini-batch of rows is densified at a time
        counts = counts_matrix(adata, layer, keep_sparse=True)
        self.var_names = [str(g) for g in adata.var_names]
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            module = MLPVAEModule(counts.shape[1], **self.arch).to(self.device)
        per_epoch = max(counts.shape[0] // self.batch_size, 1)
        steps = self.epochs * per_epoch
        rule = None
        if self.patience is not None:
            rule = Plateau(
                window=per_epoch, patience=self.patience, min_delta=self.min_delta, cap=steps
            )
        # dropout draws from the global generators: seed them, leave the caller's state alone
        devices = [self.device] if self.device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(seed + 17)
            run_training(
                module,
                lambda m, d, g: m(d[0], g),
                [RowBatches(counts)],
                steps=steps,
                batch_size=self.batch_size,
                optim=OptimConfig(lr=self.lr, decay_fraction=0.0),
                device=self.device,
                seed=seed,
                stop_rule=rule,
                desc="MLP VAE",
            )
        self.stop = rule.summary() if rule is not None else None
        self.module = module.to(self.device).eval().requires_grad_(False)
        self.vocabulary, self.library_model, self.conditioner = _condition_models(
            adata, counts, condition_keys, lambda: self._latent(counts)
        )
        return self

    @torch.no_grad()
    def _latent(self, counts: Any) -> np.ndarray:
        """Posterior means of dense, CSR or backed counts, ``chunk_rows`` rows at a time."""
        out, chunk = [], self.chunk_rows
        for start in range(0, counts.shape[0], chunk):
            block = dense_rows(counts, slice(start, start + chunk))
            loc, _ = self.module.encode(torch.from_numpy(block).to(self.device))
            out.append(loc.cpu().numpy())
        return np.concatenate(out)

    def embed(self, adata: Any, *, layer: str | None = None, key_added: str = "X_mlpvae") -> None:
        """Posterior means to ``adata.obsm[key_added]``."""
        if self.module is None:
            raise RuntimeError("fit() first")
        check_anndata(adata)
        if [str(g) for g in adata.var_names] != self.var_names:
            raise ValueError(
                "adata.var_names differ from the training genes (the MLP needs the same order)"
            )
        adata.obsm[key_added] = self._latent(counts_matrix(adata, layer, keep_sparse=True))

    @torch.no_grad()
    def generate(
        self, n: int, conditions: Mapping[str, Any] | None = None, *, seed: int = 0
    ) -> Any:
        """Unconditional: z ~ N(0, I) (the prior). Conditional: class latent Gaussians."""
        if self.module is None:
            raise RuntimeError("fit() first")
        codes = self.vocabulary.encode_request(conditions, n)
        rng = numpy_rng(seed, "mlpvae")
        if codes:
            z = self.conditioner.sample(codes, n, rng)
        else:
            z = rng.standard_normal((n, self.module.n_latent))
        library = self.library_model.sample(codes, self.vocabulary.keys, n, rng)
        zt = torch.as_tensor(z, dtype=torch.float32, device=self.device)
        mu, theta = self.module.decode(
            zt, torch.as_tensor(library, dtype=torch.float32, device=self.device)
        )
        counts = sample_negative_binomial(mu.cpu().numpy(), theta.cpu().numpy(), rng)
        return _generated_anndata(counts, self.var_names, self.vocabulary, codes, library, z)


# -- the Gaussian-prior ablation of scLDM --------------------------------------------------
class GaussianPriorScLDM:
    """The fitted scLDM autoencoder with latents from N(0, I) instead of the diffusion
    prior (per-token LayerNorm makes N(0, I) the natural Gaussian prior of the
    deterministic autoencoder). Conditional: class latent Gaussians over the
    flattened training latents."""

    def __init__(self, model: ScLDM):
        model._require("autoencoder")
        self.model = model
        self.conditioner: LatentGaussianConditioner | None = None

    def fit_conditions(self, adata: Any, *, layer: str | None = None) -> GaussianPriorScLDM:
        """Fit the class latent Gaussians on the encoded training cells of ``adata``."""
        if self.model.vocabulary.keys:
            counts = counts_matrix(adata, layer, keep_sparse=True)
            mean, _ = self.model._encode_counts(counts, [str(g) for g in adata.var_names])
            codes = self.model.vocabulary.encode_obs(adata.obs)
            self.conditioner = LatentGaussianConditioner(
                mean.flatten(1).numpy(), codes, self.model.vocabulary.keys
            )
        return self

    def generate(
        self, n: int, conditions: Mapping[str, Any] | None = None, *, seed: int = 0
    ) -> Any:
        model = self.model
        codes = model.vocabulary.encode_request(conditions, n)
        rng = numpy_rng(seed, "gaussian-prior")
        m, d = model.autoencoder.latent_shape
        if codes:
            if self.conditioner is None:
                raise RuntimeError("call fit_conditions() before conditional generation")
            z = self.conditioner.sample(codes, n, rng).reshape(n, m, d)
        else:
            z = rng.standard_normal((n, m, d))
        library = model.sample_library_size(n, conditions, seed=seed)
        counts = model.decode_latents(z, library, seed=seed)
        return _generated_anndata(counts, model.var_names, model.vocabulary, codes, library, z)


# -- scVI (scvi-tools) ---------------------------------------------------------------------
def scvi_available() -> bool:
    """Whether scvi-tools is installed (``pip install icml26-scldm[scvi]``)."""
    import importlib.util

    return importlib.util.find_spec("scvi") is not None


class ScviBaseline:
    """scVI (scvi-tools ``SCVI``, NB likelihood) with prior sampling for generation."""

    def __init__(
        self,
        *,
        n_latent: int = 10,
        n_layers: int = 2,
        n_hidden: int = 128,
        max_epochs: int = 100,
        batch_size: int = 128,
        device: str | torch.device | None = None,
    ):
        if not scvi_available():
            raise ImportError("ScviBaseline needs scvi-tools: pip install 'icml26-scldm[scvi]'")
        self.arch = {"n_latent": n_latent, "n_layers": n_layers, "n_hidden": n_hidden}
        self.max_epochs, self.batch_size = max_epochs, batch_size
        self.device = resolve_device(device)
        self.model = None
        self.var_names: list[str] = []
        self.vocabulary = ConditionVocabulary()
        self.library_model: LibrarySizeModel | None = None
        self.conditioner: LatentGaussianConditioner | None = None

    def fit(
        self,
        adata: Any,
        *,
        layer: str | None = None,
        condition_keys: Sequence[str] = (),
        seed: int = 0,
    ) -> ScviBaseline:
        import anndata as ad

        # scvi-tools reads CSR itself; a backed file is loaded as CSR (its non-zeros only)
        counts = counts_matrix(adata, layer, keep_sparse=True)
        if isinstance(counts, BackedCounts):
            counts = counts[slice(None)]
        self.var_names = [str(g) for g in adata.var_names]
        train = ad.AnnData(X=counts, obs=adata.obs.copy())
        train.var_names = self.var_names
        with quiet_dependencies():
            import scvi  # its import sets scvi's own logger to INFO: silence again below
        with quiet_dependencies():
            scvi.settings.seed = seed
            scvi.model.SCVI.setup_anndata(train)
            self.model = scvi.model.SCVI(train, gene_likelihood="nb", **self.arch)
            accelerator = "gpu" if self.device.type == "cuda" else "cpu"
            self.model.train(
                max_epochs=self.max_epochs,
                batch_size=self.batch_size,
                accelerator=accelerator,
                devices=1,
                train_size=1.0,
                early_stopping=False,
                # lightning's own output: progress bar, model summary, logger tips
                enable_progress_bar=False,
                enable_model_summary=False,
                enable_checkpointing=False,
                logger=False,
            )
        self.vocabulary, self.library_model, self.conditioner = _condition_models(
            adata, counts, condition_keys, lambda: self.model.get_latent_representation(train)
        )
        return self

    @torch.no_grad()
    def generate(
        self, n: int, conditions: Mapping[str, Any] | None = None, *, seed: int = 0
    ) -> Any:
        if self.model is None:
            raise RuntimeError("fit() first")
        codes = self.vocabulary.encode_request(conditions, n)
        rng = numpy_rng(seed, "scvi")
        z = (
            self.conditioner.sample(codes, n, rng)
            if codes
            else rng.standard_normal((n, self.arch["n_latent"]))
        )
        library = self.library_model.sample(codes, self.vocabulary.keys, n, rng)
        module = self.model.module
        dev = next(module.parameters()).device
        out = module.generative(
            z=torch.as_tensor(z, dtype=torch.float32, device=dev),
            library=torch.as_tensor(np.log(library)[:, None], dtype=torch.float32, device=dev),
            batch_index=torch.zeros((n, 1), dtype=torch.long, device=dev),
        )
        px = out["px"]
        counts = sample_negative_binomial(px.mu.cpu().numpy(), px.theta.cpu().numpy(), rng)
        return _generated_anndata(counts, self.var_names, self.vocabulary, codes, library, z)
