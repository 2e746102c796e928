"""The simulator, the condition vocabulary and the library-size model."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from icml26.scldm import (
    ConditionVocabulary,
    LibrarySizeModel,
    counts_matrix,
    read_h5ad,
    simulate_counts,
)


def test_simulator_is_seeded_and_returns_counts():
    a = simulate_counts(
        300, 60, n_cell_types=3, n_programs=3, n_perturbations=2, n_batches=2, seed=1
    )
    b = simulate_counts(
        300, 60, n_cell_types=3, n_programs=3, n_perturbations=2, n_batches=2, seed=1
    )
    np.testing.assert_array_equal(a.X, b.X)
    assert a.shape == (300, 60)
    assert set(a.obs["perturbation"].cat.categories) == {"control", "pert_1", "pert_2"}
    assert a.obs["batch"].nunique() == 2
    assert np.all(np.round(a.X) == a.X) and a.X.min() >= 0 and a.X.sum(1).min() > 0
    assert counts_matrix(a).dtype == np.float32


def test_simulated_programs_correlate_their_genes():
    ad = simulate_counts(1500, 80, n_cell_types=1, n_programs=2, program_size=(15, 15), seed=0)
    logn = np.log1p(ad.X / ad.X.sum(1, keepdims=True) * 1e4)
    corr = np.corrcoef(logn.T)
    prog = ad.var["program"].to_numpy()
    inside = corr[np.ix_(prog == 0, prog == 0)][np.triu_indices(int((prog == 0).sum()), 1)]
    outside = corr[np.ix_(prog == 0, prog == -1)].ravel()
    assert np.abs(inside).mean() > 3 * np.abs(outside).mean()


def test_simulator_rejects_bad_arguments():
    with pytest.raises(ValueError, match="n_cells"):
        simulate_counts(0, 10)
    with pytest.raises(ValueError, match="dispersion"):
        simulate_counts(10, 10, dispersion=(0.0, 0.1))


def test_condition_vocabulary_round_trip():
    obs = pd.DataFrame(
        {"ct": pd.Categorical(["b", "a", "b"], categories=["a", "b", "c"]), "p": ["x", "y", "x"]}
    )
    vocab = ConditionVocabulary.from_obs(obs, ["ct", "p"])
    assert vocab.categories == {"ct": ["a", "b"], "p": ["x", "y"]}  # unused categories dropped
    codes = vocab.encode_obs(obs)
    assert codes.tolist() == [[1, 0], [0, 1], [1, 0]]
    assert list(vocab.decode("ct", codes[:, 0])) == ["b", "a", "b"]
    assert vocab.encode_request({"p": "y"}, 3)["p"].tolist() == [1, 1, 1]
    with pytest.raises(ValueError, match="needs 1 or 3 values"):
        vocab.encode_request({"p": ["x", "y"]}, 3)
    obs.loc[0, "p"] = None
    with pytest.raises(ValueError, match="missing values"):
        ConditionVocabulary.from_obs(obs, ["p"])


def test_library_size_model_uses_the_most_specific_statistics():
    lib = np.r_[np.full(50, 100.0), np.full(50, 10_000.0)]
    codes = np.r_[np.zeros(50), np.ones(50)].astype(int)[:, None]
    model = LibrarySizeModel.fit(lib, codes, ["ct"])
    rng = np.random.default_rng(0)
    small = model.sample({"ct": np.zeros(20, int)}, ["ct"], 20, rng)
    large = model.sample({"ct": np.ones(20, int)}, ["ct"], 20, rng)
    np.testing.assert_allclose(small, 100.0)
    np.testing.assert_allclose(large, 10_000.0)
    again = LibrarySizeModel.from_dict(model.to_dict())
    assert again.per_class == model.per_class


def test_read_h5ad_checks_counts(tmp_path):
    ad = simulate_counts(50, 20, seed=0)
    ad.write_h5ad(tmp_path / "cells.h5ad")
    assert read_h5ad(tmp_path / "cells.h5ad").shape == (50, 20)
    ad.X = ad.X / 3.0
    ad.write_h5ad(tmp_path / "normalised.h5ad")
    with pytest.raises(ValueError, match="non-integer"):
        read_h5ad(tmp_path / "normalised.h5ad")


def test_pbmc68k_counts_are_integer_counts_with_facs_labels():
    from scipy import sparse

    from icml26.scldm import pbmc68k_counts

    adata = pbmc68k_counts()
    assert adata.shape == (700, 765)
    assert sparse.issparse(adata.X) and adata.X.dtype == np.float32
    assert np.array_equal(adata.X.data, np.round(adata.X.data)) and adata.X.data.min() >= 1
    assert adata.obs["cell_type"].nunique() == 10
    # every cell has counts; totals over the 765 kept genes are below the full n_counts
    lib = np.asarray(adata.X.sum(1)).ravel()
    assert lib.min() > 100 and 500 < lib.mean() < 1000


def test_backed_h5ad_trains_like_the_file_in_memory(tmp_path, tiny_adata):
    """A backed file (``.X`` on disk) gives the same model as the same counts in memory:
    the rows of each batch are read from the file in the order asked for."""
    import torch
    from scipy import sparse

    from icml26.scldm import BackedCounts, ScLDM, TrainingConfig, read_h5ad
    from icml26.scldm.data import library_sizes

    from .conftest import TINY_AE, TINY_DIT

    mem = tiny_adata.copy()
    mem.X = sparse.csr_matrix(mem.X)
    mem.write_h5ad(tmp_path / "cells.h5ad")
    backed = read_h5ad(tmp_path / "cells.h5ad", backed=True)
    assert backed.isbacked
    counts = counts_matrix(backed, keep_sparse=True)
    assert isinstance(counts, BackedCounts)
    np.testing.assert_array_equal(library_sizes(counts), library_sizes(mem.X))
    rows = np.array([7, 3, 3, 100])
    np.testing.assert_array_equal(counts[rows].toarray(), mem.X[rows].toarray())
    training = TrainingConfig(
        autoencoder_max_steps=6, autoencoder_batch_size=32, diffusion_steps=4,
        diffusion_batch_size=32,
    )  # fmt: skip
    fits = [
        ScLDM(TINY_AE, TINY_DIT, training, device="cpu").fit(a, condition_keys=("cell_type",))
        for a in (mem, backed)
    ]
    pairs = zip(fits[0].autoencoder.parameters(), fits[1].autoencoder.parameters(), strict=True)
    for p, q in pairs:
        torch.testing.assert_close(p, q, rtol=0, atol=0)
    fits[1].embed(backed)
    assert backed.obsm["X_scldm"].shape == (mem.n_obs, 16)
    backed.file.close()


def test_backed_h5ad_rejects_values_that_are_not_counts(tmp_path):
    import anndata as ad

    from icml26.scldm import read_h5ad

    x = np.ones((30, 5), dtype=np.float32)
    x[20, 2] = 0.5
    ad.AnnData(X=x).write_h5ad(tmp_path / "bad.h5ad")
    with pytest.raises(ValueError, match="non-integer"):
        read_h5ad(tmp_path / "bad.h5ad", backed=True)


def test_dense_float32_counts_are_used_in_place_and_never_modified():
    import anndata as ad

    from icml26.scldm.data import RowBatches, _check_count_values

    x = np.arange(24, dtype=np.float32).reshape(6, 4) + 1.0
    adata = ad.AnnData(X=x.copy())
    counts = counts_matrix(adata, keep_sparse=True)
    assert counts is adata.X  # no second dense copy on the training path
    batch = RowBatches(counts)[slice(0, 3)]
    batch += 100.0  # a batch is its own memory: the AnnData is untouched
    np.testing.assert_array_equal(adata.X, x)
    # not float32, or not exactly whole: a rounded float32 copy, as before
    half = ad.AnnData(X=x.astype(np.float64))
    assert counts_matrix(half, keep_sparse=True) is not half.X
    near = ad.AnnData(X=x + np.float32(1e-7))
    assert counts_matrix(near, keep_sparse=True) is not near.X
    assert counts_matrix(adata) is not adata.X  # the dense default stays a copy
    # the value check runs in chunks: a bad value in the last chunk is still found
    bad = np.ones(1000, dtype=np.float32)
    bad[-1] = 0.5
    with pytest.raises(ValueError, match="non-integer"):
        _check_count_values(bad, "x", chunk=64)
    bad[-1] = -1.0
    with pytest.raises(ValueError, match="negative"):
        _check_count_values(bad, "x", chunk=64)
