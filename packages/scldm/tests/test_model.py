"""The scverse front end: fit / generate / embed / save / load, and bad input."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import sparse

from icml26.scldm import AutoencoderConfig, DiTConfig, ScLDM, TrainingConfig
from icml26.shared import torch_generator


def test_generate_returns_counts_anndata(fitted):
    gen = fitted.generate(12, {"cell_type": "type_1"}, solver="euler", steps=4, seed=0)
    assert gen.shape == (12, 40)
    assert list(gen.var_names) == fitted.var_names
    assert (gen.obs["cell_type"] == "type_1").all()
    x = np.asarray(gen.X)
    assert x.min() >= 0 and np.all(x == np.round(x))
    assert gen.obsm["X_scldm"].shape == (12, 16)
    assert gen.uns["scldm_generation"]["nfe"] == 4


def test_guidance_zero_equals_unconditional_sampling(fitted):
    kw = {"solver": "heun", "steps": 3, "seed": 5, "library_size": 1500.0}
    uncond = fitted.generate(10, **kw)
    zero = fitted.generate(
        10, {"cell_type": "type_0", "perturbation": "pert_1"}, guidance=0.0, **kw
    )
    one = fitted.generate(10, {"cell_type": "type_0", "perturbation": "pert_1"}, guidance=1.0, **kw)
    np.testing.assert_allclose(zero.obsm["X_scldm"], uncond.obsm["X_scldm"], atol=1e-5)
    np.testing.assert_array_equal(zero.X, uncond.X)
    assert np.abs(one.obsm["X_scldm"] - uncond.obsm["X_scldm"]).max() > 1e-4


def test_same_seed_same_cells(fitted):
    a = fitted.generate(8, solver="euler", steps=3, seed=1)
    b = fitted.generate(8, solver="euler", steps=3, seed=1)
    c = fitted.generate(8, solver="euler", steps=3, seed=2)
    np.testing.assert_array_equal(a.X, b.X)
    assert not np.array_equal(a.X, c.X)


def test_save_load_round_trip(fitted, tiny_adata, tmp_path):
    fitted.save(tmp_path / "model")
    loaded = ScLDM.load(tmp_path / "model", device="cpu")
    assert loaded.var_names == fitted.var_names and loaded.condition_keys == fitted.condition_keys
    kw = {"solver": "euler", "steps": 3, "seed": 4}
    np.testing.assert_array_equal(
        loaded.generate(6, {"perturbation": "control"}, **kw).X,
        fitted.generate(6, {"perturbation": "control"}, **kw).X,
    )
    a, b = tiny_adata[:20].copy(), tiny_adata[:20].copy()
    fitted.embed(a)
    loaded.embed(b)
    np.testing.assert_allclose(a.obsm["X_scldm"], b.obsm["X_scldm"], atol=1e-6)
    with pytest.raises(ValueError, match="not a saved ScLDM"):
        ScLDM.load(tmp_path / "nothing")


def test_standardised_latents_round_trip(tiny_adata, tmp_path):
    """The DiT sees standardised latents; samples come back in the autoencoder's space."""
    ae = AutoencoderConfig(
        n_embed=16, n_latent_tokens=4, latent_dim=4, n_layer=1, n_head=2, n_head_cross=2
    )
    dit = DiTConfig(n_embed=32, n_layer=1, n_head=2, cfg_dropout=0.3, standardize_latents=True)
    training = TrainingConfig(
        autoencoder_epochs=1, autoencoder_batch_size=64, diffusion_steps=5, diffusion_batch_size=64
    )
    model = ScLDM(ae, dit, training, device="cpu").fit(
        tiny_adata, condition_keys=("cell_type",), seed=1
    )
    m, d = model.autoencoder.latent_shape
    assert model.latent_shift.shape == model.latent_scale.shape == (m, d)
    assert float(model.latent_scale.min()) > 0
    # an identity field (zero velocity) returns the noise, mapped back: z = x0·scale + shift
    z, _ = model.sample_latents(4, solver="euler", steps=1, seed=2)
    with torch.no_grad():
        model.dit.final_layer.linear.weight.zero_()
        model.dit.final_layer.linear.bias.zero_()
    z0, _ = model.sample_latents(4, solver="euler", steps=1, seed=2)
    noise = torch.randn((4, m, d), generator=torch_generator(2, "latent-noise"))
    np.testing.assert_allclose(z0, (noise * model.latent_scale + model.latent_shift).numpy(), 1e-5)
    assert not np.allclose(z, z0)
    model.save(tmp_path / "std")
    loaded = ScLDM.load(tmp_path / "std", device="cpu")
    torch.testing.assert_close(loaded.latent_scale, model.latent_scale)
    np.testing.assert_array_equal(
        loaded.sample_latents(3, {"cell_type": "type_0"}, solver="euler", steps=2)[0],
        model.sample_latents(3, {"cell_type": "type_0"}, solver="euler", steps=2)[0],
    )


def test_embed_accepts_a_gene_subset_in_any_order(fitted, tiny_adata):
    cells = tiny_adata[:15].copy()
    fitted.embed(cells, key_added="X_full")
    assert cells.obsm["X_full"].shape == (15, 16)
    assert cells.uns["X_full"]["params"]["n_tokens"] == 4
    reordered = cells[:, ::-1].copy()
    fitted.embed(reordered, key_added="X_rev")
    np.testing.assert_allclose(reordered.obsm["X_rev"], cells.obsm["X_full"], atol=1e-5)
    subset = cells[:, :25].copy()
    subset = subset[subset.X.sum(1) > 0].copy()
    fitted.embed(subset)  # fewer genes: still a valid set
    unknown = cells.copy()
    unknown.var_names = [f"other_{i}" for i in range(unknown.n_vars)]
    with pytest.raises(ValueError, match="not seen in training"):
        fitted.embed(unknown)


def test_bad_counts_are_rejected(fitted, tiny_adata):
    negative = tiny_adata[:10].copy()
    negative.X[0, 0] = -1
    with pytest.raises(ValueError, match="negative"):
        fitted.embed(negative)
    fractional = tiny_adata[:10].copy()
    fractional.X = np.log1p(fractional.X)
    with pytest.raises(ValueError, match="non-integer"):
        fitted.embed(fractional)
    layered = tiny_adata[:10].copy()
    layered.layers["counts"] = sparse.csr_matrix(layered.X)
    layered.layers["counts"].data[0] = 0.5
    with pytest.raises(ValueError, match="non-integer"):
        fitted.embed(layered, layer="counts")
    with pytest.raises(ValueError, match="layer 'missing' not found"):
        fitted.embed(layered, layer="missing")
    with pytest.raises(TypeError, match="AnnData"):
        fitted.embed(np.ones((3, 40)))


def test_unknown_conditions_are_rejected(fitted):
    with pytest.raises(
        ValueError, match=r"unknown value\(s\) \['type_9'\] for condition 'cell_type'"
    ):
        fitted.generate(3, {"cell_type": "type_9"})
    with pytest.raises(ValueError, match="unknown condition key 'tissue'"):
        fitted.generate(3, {"tissue": "lung"})
    with pytest.raises(ValueError, match="guidance given for"):
        fitted.generate(3, {"cell_type": "type_0"}, guidance={"perturbation": 2.0})
    with pytest.raises(ValueError, match="n must be a positive integer"):
        fitted.generate(0)


def test_fit_rejects_bad_condition_keys(tiny_adata):
    model = ScLDM(device="cpu")
    with pytest.raises(ValueError, match=r"condition key 'tissue' not in adata\.obs"):
        model.fit(tiny_adata, condition_keys=("tissue",))
    with pytest.raises(RuntimeError, match="not fitted"):
        model.generate(3)


def test_readme_quickstart_runs(tmp_path, monkeypatch):
    import re
    from pathlib import Path

    readme = (Path(__file__).parents[1] / "README.md").read_text()
    code = re.search(r"```python\n(.*?)```", readme, re.S).group(1)
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)
    assert namespace["cells"].shape == (100, 100)
    assert (namespace["both"].obs["perturbation"] == "pert_1").all()
    assert (tmp_path / "scldm_model" / "model.safetensors").is_file()


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_fit_and_generate_on_cuda(tiny_adata):
    ae = AutoencoderConfig(
        n_embed=16, n_latent_tokens=4, latent_dim=4, n_layer=1, n_head=2, n_head_cross=2
    )
    dit = DiTConfig(n_embed=32, n_layer=1, n_head=2, standardize_latents=True)
    training = TrainingConfig(autoencoder_epochs=1, diffusion_steps=5)
    model = ScLDM(ae, dit, training, device="cuda").fit(tiny_adata, condition_keys=("cell_type",))
    cells = model.generate(8, {"cell_type": "type_1"}, solver="dopri5")
    assert cells.shape == (8, tiny_adata.n_vars) and np.all(cells.X >= 0)
    assert next(model.dit.parameters()).device.type == "cuda"


def test_sparse_counts_train_one_batch_of_rows_at_a_time(monkeypatch):
    """A CSR matrix is never densified whole: fit, embed and reconstruct densify at most
    one mini-batch of rows (training: 64, encoding: 512) of the 700 cells."""
    from icml26.scldm import simulate_counts

    adata = simulate_counts(700, 30, n_cell_types=2, n_programs=2, n_perturbations=1, seed=1)
    dense = np.asarray(adata.X, dtype=np.float32).copy()
    adata.X = sparse.csr_matrix(dense)
    densified: list[int] = []
    for cls in (sparse.csr_matrix, sparse.csr_array):
        original = cls.toarray

        def spy(self, *args, _original=original, **kwargs):
            densified.append(self.shape[0])
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(cls, "toarray", spy)
    training = TrainingConfig(
        autoencoder_max_steps=12, autoencoder_batch_size=64, diffusion_steps=5
    )
    ae = AutoencoderConfig(n_embed=16, n_latent_tokens=4, latent_dim=4, n_layer=1, n_head=2)
    dit = DiTConfig(n_embed=32, n_layer=1, n_head=2)
    model = ScLDM(ae, dit, training, device="cpu")
    model.fit(adata, condition_keys=("cell_type",), seed=0)
    model.embed(adata)
    model.reconstruct(adata)
    assert densified and max(densified) <= 512 < adata.n_obs
    assert 64 in densified  # the training batches
    # the same model encodes the dense matrix identically
    monkeypatch.undo()
    dense_adata = adata.copy()
    dense_adata.X = dense
    model.embed(dense_adata)
    np.testing.assert_allclose(dense_adata.obsm["X_scldm"], adata.obsm["X_scldm"], atol=1e-5)
