"""The MLP VAE, the Gaussian-prior ablation and the class latent Gaussians."""

from __future__ import annotations

import numpy as np
import pytest

from icml26.scldm import (
    MLPVAE,
    GaussianPriorScLDM,
    LatentGaussianConditioner,
    ScviBaseline,
    scvi_available,
)


def test_mlp_vae_generates_counts(tiny_adata):
    vae = MLPVAE(n_hidden=32, n_latent=4, epochs=3, batch_size=64, device="cpu")
    vae.fit(tiny_adata, condition_keys=("cell_type",), seed=0)
    gen = vae.generate(20, seed=0)
    assert gen.shape == (20, 40) and np.asarray(gen.X).min() >= 0
    cond = vae.generate(10, {"cell_type": "type_2"}, seed=0)
    assert (cond.obs["cell_type"] == "type_2").all()
    vae.embed(tiny_adata)
    assert tiny_adata.obsm["X_mlpvae"].shape == (240, 4)
    with pytest.raises(ValueError, match="unknown value"):
        vae.generate(3, {"cell_type": "nope"})


def test_gaussian_prior_uses_the_same_autoencoder(fitted, tiny_adata):
    ablation = GaussianPriorScLDM(fitted).fit_conditions(tiny_adata)
    gen = ablation.generate(15, seed=0)
    assert gen.shape == (15, 40)
    z = gen.obsm["X_latent"].reshape(15, 4, 4)
    assert abs(z.mean()) < 0.5 and 0.5 < z.std() < 1.5  # N(0, I) latents
    cond = ablation.generate(15, {"cell_type": "type_0"}, seed=0)
    assert (cond.obs["cell_type"] == "type_0").all()


def test_conditioner_composes_unseen_combinations():
    rng = np.random.default_rng(0)
    codes = np.array([[a, b] for a in range(2) for b in range(2) for _ in range(200)])
    latents = codes * np.array([4.0, 10.0]) + 0.1 * rng.normal(size=(800, 2))
    seen = ~((codes[:, 0] == 1) & (codes[:, 1] == 1))
    cond = LatentGaussianConditioner(latents[seen], codes[seen], ["a", "b"])
    z = cond.sample({"a": np.ones(300, int), "b": np.ones(300, int)}, 300, rng)
    # additive composition of class shifts lands near the true (4, 10)
    np.testing.assert_allclose(z.mean(0), [4.0, 10.0], atol=1.5)
    z_seen = cond.sample({"a": np.zeros(300, int)}, 300, rng)
    assert abs(z_seen[:, 0].mean()) < 0.2


@pytest.mark.slow
@pytest.mark.skipif(not scvi_available(), reason="scvi-tools not installed")
def test_scvi_baseline_generates(tiny_adata):
    model = ScviBaseline(n_latent=4, n_hidden=32, max_epochs=2, device="cpu")
    model.fit(tiny_adata, condition_keys=("cell_type",), seed=0)
    gen = model.generate(10, seed=0)
    assert gen.shape == (10, 40) and np.asarray(gen.X).min() >= 0
    assert (model.generate(5, {"cell_type": "type_1"}).obs["cell_type"] == "type_1").all()
