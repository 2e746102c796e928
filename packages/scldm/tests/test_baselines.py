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


def test_mlp_vae_trains_alike_on_dense_csr_and_backed_counts(tmp_path, tiny_adata, monkeypatch):
    """Sparse and backed counts give the dense fit's parameters, and only mini-batches of
    rows are ever densified."""
    import torch
    from scipy import sparse

    from icml26.scldm import read_h5ad

    dense = tiny_adata.copy()
    dense.X = np.asarray(sparse.csr_matrix(dense.X).toarray())
    csr = dense.copy()
    csr.X = sparse.csr_matrix(csr.X)
    csr.write_h5ad(tmp_path / "cells.h5ad")
    backed = read_h5ad(tmp_path / "cells.h5ad", backed=True)
    largest = []
    toarray = sparse.csr_matrix.toarray

    def spy(self, *args, **kwargs):
        largest.append(self.shape[0])
        return toarray(self, *args, **kwargs)

    def fit(a):
        return MLPVAE(n_hidden=16, n_latent=3, epochs=2, patience=None, batch_size=64,
                      device="cpu").fit(a, condition_keys=("cell_type",), seed=0)  # fmt: skip

    fits = [fit(dense)]
    monkeypatch.setattr(sparse.csr_matrix, "toarray", spy)
    monkeypatch.setattr(MLPVAE, "chunk_rows", 50)
    fits += [fit(csr), fit(backed)]
    assert largest and max(largest) <= 64  # batches and 50-row chunks, never all 240 rows
    for other in fits[1:]:
        pairs = zip(fits[0].module.parameters(), other.module.parameters(), strict=True)
        for p, q in pairs:
            torch.testing.assert_close(p, q, rtol=0, atol=0)
    backed.file.close()


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


_QUIET_SCVI = """
import torch
torch.set_num_threads(1)
from icml26.scldm import ScviBaseline, simulate_counts
adata = simulate_counts(96, 16, n_cell_types=2, n_perturbations=1, seed=0)
model = ScviBaseline(n_latent=2, n_hidden=8, max_epochs=1, batch_size=32, device="cpu")
model.fit(adata, condition_keys=("cell_type",), seed=0)
print("fitted", model.generate(4, seed=0).shape)
"""


@pytest.mark.slow  # importing scvi-tools alone is ~30 s of CPU
@pytest.mark.skipif(not scvi_available(), reason="scvi-tools not installed")
def test_scvi_baseline_fit_writes_nothing_to_stderr():
    """No lightning INFO lines, litlogger tip or deprecation warnings from a fit."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "default"}
    env.pop("LITLOGGER_DISABLE", None)
    proc = subprocess.run(
        [sys.executable, "-c", _QUIET_SCVI], capture_output=True, text=True, env=env, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    assert "fitted (4, 16)" in proc.stdout
    assert proc.stderr == "", proc.stderr
    assert "GPU available" not in proc.stdout and "litlogger" not in proc.stdout
