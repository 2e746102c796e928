import pytest

from icml26.prism.probe import linear_probe, residue_embeddings


def test_probe_reports_f1_and_pr_auc(world, make_model):
    _, rep = world
    model = make_model("prism")
    emb = residue_embeddings(model, rep.sequences[:4])
    assert emb.shape == (sum(len(s) for s in rep.sequences[:4]), 32)
    res = linear_probe(
        model, rep.sequences[:40], rep.ngl[:40], rep.sequences[40:60], rep.ngl[40:60]
    )
    assert 0.0 <= res.f1 <= 1.0 and 0.0 < res.pr_auc <= 1.0
    with pytest.raises(ValueError, match="one entry per residue"):
        linear_probe(model, rep.sequences[:2], rep.ngl[:1], rep.sequences[2:3], rep.ngl[2:3])
