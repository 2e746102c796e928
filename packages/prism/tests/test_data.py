import numpy as np
import pytest

from icml26.prism.data import (
    SimConfig,
    Simulation,
    germline_identity,
    read_airr,
    read_dms_csv,
    read_fasta,
    read_oas_csv,
    substitution_kernel,
    write_airr,
)
from icml26.prism.germline import is_cdr


def test_simulated_repertoire_is_germline_dominated_with_exact_labels(world):
    sim, rep = world
    assert 0.01 < rep.ngl_fraction < 0.15
    for s, g, n, r in zip(rep.sequences, rep.germline, rep.ngl, rep.regions, strict=True):
        assert len(s) == len(g) == len(n) == len(r)
        np.testing.assert_array_equal(n, np.array(list(s)) != np.array(list(g)))
    ngl = np.concatenate(rep.ngl)
    cdr = is_cdr(np.concatenate(rep.regions))
    assert ngl[cdr].mean() > 2 * ngl[~cdr].mean()  # SHM targets the CDRs
    # the paratope optima are mostly non-germline by construction
    assert (~sim.fitness.optimum_is_germline[:10]).sum() >= 5
    k = substitution_kernel()
    np.testing.assert_allclose(k.sum(1), 1.0)
    assert np.all(np.diag(k) == 0)


def test_selection_raises_fitness_and_scans_are_complete(world):
    sim, _ = world
    rng = np.random.default_rng(3)
    lineages = sim.evolve(rng, 20, snapshots=[0, sim.config.generations])
    f0 = [np.mean([sim.fitness(c, r["keys"]) for c in r["cells"][0]]) for r in lineages]
    f1 = [
        np.mean([sim.fitness(c, r["keys"]) for c in r["cells"][sim.config.generations]])
        for r in lineages
    ]
    assert np.mean(f1) > np.mean(f0) + 0.5
    (scan,) = sim.mutational_scans(rng, 1, n_doubles=5, noise_sd=0.0)
    n = len(scan.wild_type)
    assert len(scan.variants) == 19 * n + 5
    np.testing.assert_allclose(scan.fitness, scan.true_fitness)
    # a mutation outside the paratope leaves the hidden fitness unchanged
    off = [i for i, m in enumerate(scan.variants[: 19 * n]) if scan.keys[m[0][0]] < 0]
    np.testing.assert_allclose(scan.true_fitness[off], scan.wild_type_fitness)
    assert germline_identity(scan.germline, scan.germline) == 1.0
    with pytest.raises(ValueError):
        SimConfig(nd_length=(2, 1))
    with pytest.raises(TypeError):
        Simulation.create(SimConfig(), 0)  # type: ignore[arg-type]


def test_readers_round_trip(world, tmp_path):
    _, rep = world
    path = write_airr(tmp_path / "rep.tsv", rep.subset(range(5)))
    recs = read_airr(path)
    assert [r["sequence"] for r in recs] == rep.sequences[:5]
    for r, n in zip(recs, rep.ngl[:5], strict=True):
        np.testing.assert_array_equal(r["ngl"], n)
    oas = tmp_path / "unit.csv"
    oas.write_text(
        '"{""Species"": ""human"", ""Chain"": ""Heavy""}"\n'
        "sequence_alignment_aa,germline_alignment_aa,v_call,fwr1_aa,cdr1_aa,fwr2_aa,cdr2_aa,"
        "fwr3_aa,cdr3_aa,fwr4_aa\n"
        "EVKLVE,EVQLVE,IGHV3-23*01,EV,KL,V,,E,,\n"
    )
    (rec,) = read_oas_csv(oas)
    assert rec["sequence"] == "EVKLVE" and rec["ngl"].tolist() == [0, 0, 1, 0, 0, 0]
    assert rec["regions"].tolist() == [0, 0, 1, 1, 2, 4]
    fa = tmp_path / "x.fasta"
    fa.write_text(">a\nEVQ\nLV\n>b\nqvq\n")
    assert read_fasta(fa) == [("a", "EVQLV"), ("b", "qvq")]
    fa.write_text(">a\nEVQ1\n")
    with pytest.raises(ValueError, match="position 3"):
        read_fasta(fa)
    dms = tmp_path / "dms.csv"
    dms.write_text("sequence,fitness\nEVQ,1.5\nEVA,nan\nEVW,-0.5\n")
    seqs, fit = read_dms_csv(dms)
    assert seqs == ["EVQ", "EVW"] and fit.tolist() == [1.5, -0.5]


def test_reversion_scan_reverts_somatic_mutations_to_germline(world):
    sim, _ = world
    rng = np.random.default_rng(4)
    (scan,) = sim.mutational_scans(rng, 1, noise_sd=0.0)
    somatic = set(np.flatnonzero(scan.ngl).tolist())
    k = len(somatic)
    assert k >= 3
    small = sim.reversion_scan(scan, rng, max_variants=2**k, noise_sd=0.0)
    assert len(small.variants) == 2**k - 1  # every non-empty subset
    assert len({tuple(p for p, _ in v) for v in small.variants}) == 2**k - 1
    for muts in small.variants:
        assert {p for p, _ in muts} <= somatic
        assert all(scan.germline[p] == a != scan.wild_type[p] for p, a in muts)
    full = next(i for i, v in enumerate(small.variants) if len(v) == k)
    assert small.sequences()[full] == scan.germline  # the full reversion is the germline
    idx = {a: i for i, a in enumerate("ACDEFGHIKLMNPQRSTVWY")}
    res = np.array([[idx[c] for c in s] for s in small.sequences()])
    np.testing.assert_allclose(small.true_fitness, sim.fitness(res, scan.site_keys))
    np.testing.assert_allclose(small.fitness, small.true_fitness)
    capped = sim.reversion_scan(scan, rng, max_variants=k + 3)
    assert len(capped.variants) == k + 3
    assert sum(len(v) == 1 for v in capped.variants) == k
    assert any(len(v) == k for v in capped.variants)
    with pytest.raises(ValueError, match="max_variants"):
        sim.reversion_scan(scan, rng, max_variants=0)


def test_airr_nucleotide_alignments_are_translated(tmp_path):
    from icml26.prism.germline import translate_alignment

    # E V K L | germline E V Q L; a deleted codon in the sequence; an N-addition codon
    seq_nt = "GAAGTGAAACTG---GGC"
    germ_nt = "GAGGTGCAGCTGAGC..."
    s_aa, g_aa = translate_alignment(seq_nt, germ_nt)
    assert s_aa == "EVKL-G" and g_aa == "EVQLS-"
    assert translate_alignment("GGCGGC", "GNCG-C") == ("GG", "XX")
    path = tmp_path / "igblast.tsv"
    path.write_text(
        "sequence_id\tsequence_alignment\tgermline_alignment\tv_call\tv_germline_start\n"
        f"s1\tT{seq_nt}\tT{germ_nt}\tIGHV3-23*01\t2\n"
    )
    (rec,) = read_airr(path)
    assert rec["sequence"] == "EVKLG" and rec["ngl"].tolist() == [0, 0, 1, 0, 0]
    assert rec["translated"]
    with pytest.raises(ValueError, match="codon 1"):
        translate_alignment("GAAG-G", "GAAGTG")
    with pytest.raises(ValueError, match="stop codon"):
        translate_alignment("TAA", "GAA")
    path.write_text("sequence_id\tsequence\ns1\tGAA\n")
    with pytest.raises(ValueError, match="sequence_alignment"):
        read_airr(path)
