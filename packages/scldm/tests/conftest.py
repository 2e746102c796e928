"""Tiny seeded fixtures shared by the scLDM tests."""

from __future__ import annotations

import pytest
import torch

from icml26.scldm import AutoencoderConfig, DiTConfig, ScLDM, TrainingConfig, simulate_counts

# The test models are tiny: one intra-op thread avoids OpenMP synchronisation, which
# dominates (up to 100x) on a loaded 2-core machine.
torch.set_num_threads(1)

TINY_AE = AutoencoderConfig(
    n_embed=16, n_latent_tokens=4, latent_dim=4, n_layer=1, n_head=2, n_head_cross=2
)
TINY_DIT = DiTConfig(n_embed=32, n_layer=1, n_head=2, cfg_dropout=0.3)
TINY_TRAINING = TrainingConfig(
    autoencoder_epochs=2, autoencoder_batch_size=64, diffusion_steps=30, diffusion_batch_size=64
)


@pytest.fixture(scope="session")
def tiny_adata():
    return simulate_counts(
        240, 40, n_cell_types=3, n_programs=3, program_size=(5, 10), n_perturbations=1, seed=3
    )


@pytest.fixture(scope="session")
def fitted(tiny_adata):
    model = ScLDM(TINY_AE, TINY_DIT, TINY_TRAINING, device="cpu")
    return model.fit(tiny_adata, condition_keys=("cell_type", "perturbation"), seed=0)


@pytest.fixture
def double_precision():
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(old)
