from dataclasses import replace

import numpy as np
import pytest
import torch

from icml26.prism.conditioning import Conditioning
from icml26.prism.generate import masked_log_probs
from icml26.prism.germline import SPECIAL_REGION
from icml26.prism.probe import residue_embeddings
from icml26.prism.score import pseudo_log_likelihood, score_variants
from icml26.prism.site_profile import SiteProfile
from icml26.prism.vocab import AA_ORDER, GL_IDS, MASK, Tokenizer

SEQS = ["EVQLVESGGGLVQPGG", "QVQLVQSGAEVKK"]
REGIONS = [np.arange(16) % 7, np.arange(13) % 7]


def _conditioned(make_model, kind="prism"):
    return make_model(kind, n_v_genes=3, n_j_genes=2, n_regions=8)


def test_build_broadcasts_and_validates():
    c = Conditioning.build(2, v_gene=1, j_gene=0, regions=REGIONS)
    np.testing.assert_array_equal(c.v_gene, [1, 1])
    assert len(c.regions) == 2
    one = Conditioning.build(3, regions=np.zeros(5, dtype=int))
    assert len(one.regions) == 3 and one.v_gene is None
    assert Conditioning.build(2) is None
    with pytest.raises(ValueError, match="both v_gene and j_gene"):
        Conditioning.build(2, v_gene=1)
    with pytest.raises(ValueError, match="one integer id per sequence"):
        Conditioning.build(2, v_gene=[0, 1, 2], j_gene=0)
    with pytest.raises(ValueError, match="non-negative"):
        Conditioning.build(2, v_gene=-1, j_gene=0)


def test_token_layout_puts_regions_on_residues_only():
    enc = Tokenizer()(SEQS)
    t = Conditioning.build(2, regions=REGIONS).tensors(enc.input_ids, torch.device("cpu"))
    reg = t["region_ids"].numpy()
    for i, r in enumerate(REGIONS):
        np.testing.assert_array_equal(reg[i, enc.residue_mask[i]], r)
        assert (reg[i, ~enc.residue_mask[i]] == SPECIAL_REGION).all()
    with pytest.raises(ValueError, match="region ids"):
        Conditioning.build(2, regions=[np.zeros(3, dtype=int)] * 2).tensors(
            enc.input_ids, torch.device("cpu")
        )


def test_batched_pll_feeds_each_sequence_its_own_conditioning(make_model):
    model = _conditioned(make_model)
    res = pseudo_log_likelihood(model, SEQS, v_gene=[2, 0], j_gene=[1, 0], regions=REGIONS)
    # reference: one forward pass per masked position with explicit ids
    seq, v, j, reg = SEQS[1], 0, 0, REGIONS[1]
    ids = torch.as_tensor(Tokenizer().encode(seq))
    reg_tok = torch.full(ids.shape, SPECIAL_REGION)
    reg_tok[1:-1] = torch.as_tensor(reg)
    ref = []
    with torch.no_grad():
        for pos in range(1, len(ids) - 1):
            x = ids.clone().unsqueeze(0)
            x[0, pos] = MASK
            out = model(
                x,
                v_gene_ids=torch.tensor([v]),
                j_gene_ids=torch.tensor([j]),
                region_ids=reg_tok.unsqueeze(0),
            )
            ref.append(out.log_probs()[0, pos, GL_IDS[AA_ORDER.index(seq[pos - 1])]])
    got = res.per_position["gl"][1]
    np.testing.assert_allclose(got, np.array([float(r) for r in ref]), rtol=1e-5, atol=1e-5)
    # the conditioning matters: another V gene gives other values
    other = pseudo_log_likelihood(model, SEQS, v_gene=[2, 1], j_gene=[1, 0], regions=REGIONS)
    assert not np.allclose(other.per_position["gl"][1], got)


@pytest.mark.parametrize("kind", ["prism", "prismless"])
def test_scoring_generation_and_embeddings_take_conditioning(kind, make_model):
    model = _conditioned(make_model, kind)
    wt = SEQS[0]
    variants = [wt[:3] + "A" + wt[4:], wt[:5] + "W" + wt[6:]]
    kw = {"v_gene": 1, "j_gene": 1, "regions": REGIONS[0]}
    a = score_variants(model, wt, variants, **kw)
    b = score_variants(model, wt, variants, **{**kw, "v_gene": 2})
    assert np.isfinite(a).all() and not np.allclose(a, b)
    cache = masked_log_probs(model, wt, **kw)
    assert cache.gl.shape == (len(wt), 20)
    emb = residue_embeddings(model, SEQS, v_gene=[0, 1], j_gene=[0, 1], regions=REGIONS)
    assert emb.shape[0] == sum(len(s) for s in SEQS)


def test_unconditioned_model_rejects_conditioning(make_model):
    model = make_model("prism")
    with pytest.raises(ValueError, match="without V/J-gene embeddings"):
        pseudo_log_likelihood(model, SEQS, v_gene=0, j_gene=0)
    with pytest.raises(ValueError, match="without region embeddings"):
        score_variants(model, SEQS[0], ["A" + SEQS[0][1:]], regions=REGIONS[0])
    conditioned = _conditioned(make_model)
    with pytest.raises(ValueError, match="out of range"):
        pseudo_log_likelihood(conditioned, SEQS, v_gene=5, j_gene=0)


def test_site_profile_reads_the_repertoire(world):
    sim, rep = world
    scan = sim.mutational_scans(np.random.default_rng(3), 1)[0]
    profile = SiteProfile.fit(rep)
    for method in ("wt_centred_ngl", "masked_marginal"):
        s = profile.scores(scan, method)
        assert s.shape == (len(scan.variants),) and np.isfinite(s).all()
    # at one site, the masked marginal is the log count ratio; the NGL score reads NGL counts
    p = 0
    site = ("V", scan.v_gene, int(scan.site_keys[p]))
    others = [c for c in range(20) if AA_ORDER[c] != scan.wild_type[p]]
    single = replace(scan, variants=tuple(((p, AA_ORDER[c]),) for c in others))
    t = profile.total[site][others] + profile.pseudocount
    mm = profile.scores(single, "masked_marginal")
    np.testing.assert_allclose(np.diff(mm), np.diff(np.log(t)))
    n = profile.ngl.get(site, np.zeros(20))[others] + profile.pseudocount
    ngl = profile.scores(single, "wt_centred_ngl")
    np.testing.assert_allclose(np.diff(ngl), np.diff(np.log(n)))
    with pytest.raises(ValueError, match="unknown method"):
        profile.scores(scan, "plain")
