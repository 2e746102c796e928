"""A training step and sampling at small size on CUDA (``pytest -m gpu``)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from icml26.scldm import AutoencoderConfig, DiTConfig, ScLDM, TrainingConfig, simulate_counts

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def cuda_model():
    if not torch.cuda.is_available():
        pytest.skip("CUDA is not available")
    adata = simulate_counts(256, 50, n_cell_types=2, n_perturbations=1, seed=0)
    model = ScLDM(
        AutoencoderConfig(n_embed=16, n_latent_tokens=4, latent_dim=4, n_layer=1, n_head=2),
        DiTConfig(n_embed=32, n_layer=1, n_head=2),
        TrainingConfig(autoencoder_max_steps=20, autoencoder_batch_size=64, diffusion_steps=20),
        device="cuda",
    )
    return adata, model.fit(adata, condition_keys=("cell_type",), seed=0)


def test_training_runs_on_cuda(cuda_model):
    _, model = cuda_model
    assert next(model.autoencoder.parameters()).is_cuda and next(model.dit.parameters()).is_cuda
    assert np.isfinite(model.history["autoencoder"]).all()
    assert np.isfinite(model.history["diffusion"]).all()


def test_sampling_and_encoding_on_cuda(cuda_model):
    adata, model = cuda_model
    cells = model.generate(32, {"cell_type": "type_0"}, solver="heun", steps=4, seed=0)
    assert cells.shape == (32, 50) and np.asarray(cells.X).min() >= 0
    model.embed(adata, key_added="X_gpu")
    assert np.isfinite(adata.obsm["X_gpu"]).all()
