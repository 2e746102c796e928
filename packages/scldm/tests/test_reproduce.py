"""The reproduction: a reduced run of the same code in the fast tier, the smoke
preset's claim (3 seeds) in the slow tier."""

from __future__ import annotations

import dataclasses
import math

import pytest

from icml26.scldm.reproduce import (
    G_EMBED,
    G_PERT,
    G_RECON,
    G_TYPE,
    G_UNCOND,
    PAPER,
    PCA_EMBED,
    PRESETS,
    REAL,
    RECON,
    RELATIVE,
    judge,
    run,
)
from icml26.shared import Report, reproduce

REDUCED = dataclasses.replace(
    PRESETS["smoke"],
    n_cells=500,
    n_genes=60,
    n_programs=4,
    ae_epochs=2,
    ae_batch_size=128,
    ae_max_steps=20,  # the convergence rule, capped
    dit_max_steps=40,  # the DiT's rule, capped
    dit_window=10,
    mlp_epochs=2,
    solver_steps=4,
    scvi=False,
    umap=False,
)


def test_reduced_run_computes_every_table_and_check(tmp_path):
    report = Report.merge([run(REDUCED, 0, tmp_path)])
    assert {G_UNCOND, G_TYPE, G_PERT, G_RECON} <= set(report.groups)
    for metric in ("mmd", "corr_error", "type_acc"):
        assert math.isfinite(report.stat(RECON, metric, G_RECON).mean)
    # the classifier's accuracy on the real test cells: the reference of every type accuracy
    real = report.stat(REAL, "type_acc", G_RECON).mean
    assert 0.5 <= real <= 1.0
    # (c) restated relative to the real cells: reported, one seed, so the ratio of the two rows
    relative = report.stat(RELATIVE, "type_acc", G_RECON).mean
    assert relative == pytest.approx(report.stat("scLDM", "type_acc", G_TYPE).mean / real)
    for method in ("scLDM", "scLDM AE + Gaussian prior", "MLP VAE"):
        for metric in ("mmd", "w1", "w2", "r2_mean", "r2_var", "corr_error", "knn_acc"):
            value = report.stat(method, metric, G_UNCOND).mean
            assert math.isfinite(value)
        assert 0.0 <= report.stat(method, "type_acc", G_TYPE).mean <= 1.0
    assert report.stat("control cells (no effect)", "mmd", G_PERT).mean >= 0
    assert report.stat("scLDM", "mmd", G_UNCOND).mean >= 0
    assert 0 < report.stat("scLDM", "dit_steps", G_UNCOND).mean <= REDUCED.dit_max_steps
    for method in ("scLDM", "MLP VAE", PCA_EMBED):
        assert 0.0 <= report.stat(method, "knn_type_acc", G_EMBED).mean <= 1.0
    checks = judge(report, REDUCED)
    # the relative row is not judged: the checks only
    assert [c.name[:3] for c in checks] == ["(a)", "(b)", "(c)", "(c)", "(d)"]
    assert checks[3].name.startswith("(c) ceiling")
    assert all(c.detail for c in checks)


@pytest.mark.slow  # ~10 s of CPU: encodes 700 cells × 765 genes four times
def test_reduced_pbmc_run_uses_the_real_cells(tmp_path):
    config = dataclasses.replace(
        PRESETS["pbmc"], ae_max_steps=6, dit_max_steps=10, dit_window=5, mlp_epochs=2,
        solver_steps=2, scvi=False, umap=False, n_pcs=10,
    )  # fmt: skip
    report = Report.merge([run(config, 0, tmp_path)])
    assert G_PERT not in report.groups
    assert {G_UNCOND, G_TYPE, G_RECON, G_EMBED} <= set(report.groups)
    assert report.stat("scLDM", "mmd", G_UNCOND).mean >= 0
    # ten FACS types: the PCA of the real cells keeps much of the identity
    assert report.stat(PCA_EMBED, "knn_type_acc", G_EMBED).mean > 0.5
    assert "pbmc68k_reduced" in report.notes[0]


def test_presets_are_registered():
    assert set(PAPER.presets) == {"smoke", "pbmc", "paper"}
    for config in PAPER.presets.values():  # both stages stop by their convergence rules
        assert config.ae_max_steps is not None and config.dit_max_steps is not None
    assert PAPER.presets["paper"].n_genes >= 2000 and PAPER.presets["smoke"].n_genes <= 500


@pytest.mark.slow
def test_smoke_preset_what_holds(tmp_path):
    """What the smoke preset (3 seeds) shows on CPU (see the README): scLDM beats scVI on
    MMD and gene-gene correlation error by the claimed margins, its diffusion prior beats
    the Gaussian prior of the same autoencoder, and conditional generation is far above
    chance (5 types). The margins against the MLP VAE and the 90 % of check (c) are not
    reached at this budget, so they are not asserted."""
    report = reproduce(PAPER, preset="smoke", seeds=3, out=tmp_path)
    tags = [c.name[:3] for c in report.checks]
    assert sorted(set(tags)) == ["(a)", "(b)", "(c)", "(d)"]
    versus_scvi = [c for c in report.checks if "scVI" in c.name]
    if versus_scvi:  # scvi-tools installed
        assert all(c.holds for c in versus_scvi), versus_scvi
    by_tag = {c.name[:3]: c for c in report.checks}
    assert by_tag["(d)"].holds, by_tag["(d)"]
    assert report.stat("scLDM", "type_acc", G_TYPE).mean >= 0.5


def test_pbmc_split_is_stratified_with_two_test_cells_per_type():
    from icml26.scldm.reproduce import load_data

    for seed in (0, 2):
        train, test, held, combos, keys = load_data(PRESETS["pbmc"], seed)
        assert held is None and combos == [] and keys == ("cell_type",)
        counts = test.obs["cell_type"].value_counts()
        assert counts.min() >= 2 and len(counts) == 10
        assert train.n_obs + test.n_obs == 700
        assert not set(train.obs_names) & set(test.obs_names)
