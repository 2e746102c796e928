import numpy as np
import pytest
import torch

from icml26.prism.score import (
    MODES,
    pseudo_log_likelihood,
    pseudo_log_likelihood_loop,
    score_variants,
)
from icml26.prism.vocab import AA_ORDER, GL_IDS, MASK, NGL_IDS, Tokenizer

SEQ = "EVQLVESGGGLVQPGGSLRLSCAASGFTFSSYAMS"


@pytest.mark.parametrize("kind", ["prism", "prismless"])
def test_batched_pll_equals_one_position_at_a_time(kind, make_model):
    model = make_model(kind)
    cased = "EVqLVESGgGLVQPGGSLRLScAASGFTFSSYAMS"
    batched = pseudo_log_likelihood(model, [cased, "QVQLVQSGAEVKKPGASVKVSCKAS"], batch_size=7)
    loop = pseudo_log_likelihood_loop(model, cased)
    for mode in MODES:
        np.testing.assert_allclose(
            batched.per_position[mode][0], loop.per_position[mode][0], rtol=1e-5, atol=1e-5
        )
    assert batched.perplexity("marginalized").shape == (2,)
    if kind == "prism":
        # exact reads the lowercase token exactly where the input is lowercase
        ex, gl, ngl = (batched.per_position[m][0] for m in ("exact", "gl", "ngl"))
        low = np.array([c.islower() for c in cased])
        np.testing.assert_allclose(ex[low], ngl[low])
        np.testing.assert_allclose(ex[~low], gl[~low])
        marg = batched.per_position["marginalized"][0]
        np.testing.assert_allclose(marg, np.logaddexp(gl, ngl))


def test_paired_pll_covers_both_chains(make_model):
    model = make_model("prism")
    res = pseudo_log_likelihood(model, "EVQLVE", "DIQMTQ")
    assert res.per_position["gl"][0].shape == (12,)
    assert res.pooled_perplexity("gl") > 1.0


def test_wt_centred_ngl_score_by_hand(make_model):
    model = make_model("prism")
    wt = SEQ
    var = wt[:5] + "W" + wt[6:]
    got = score_variants(model, wt, [var, wt])
    ids = torch.as_tensor(Tokenizer().encode(var)).unsqueeze(0)
    masked = ids.clone()
    masked[0, 6] = MASK
    with torch.no_grad():
        lp_mut = model(masked).log_probs()[0, 6, NGL_IDS[AA_ORDER.index("W")]]
        wt_ids = torch.as_tensor(Tokenizer().encode(wt)).unsqueeze(0)
        lp_wt = model(wt_ids).log_probs()[0, 6, NGL_IDS[AA_ORDER.index(wt[5])]]
    assert got[0] == pytest.approx(float(lp_mut - lp_wt), abs=1e-5)
    assert got[1] == 0.0


def test_masked_marginal_and_errors(make_model):
    less = make_model("prismless")
    wt = SEQ
    variants = [wt[:3] + a + wt[4:] for a in "ACD" if a != wt[3]]
    s = score_variants(less, wt, variants)
    ids = torch.as_tensor(Tokenizer().encode(wt)).unsqueeze(0)
    ids[0, 4] = MASK
    with torch.no_grad():
        lp = less(ids).log_probs()[0, 4]
    ref = [
        float(lp[GL_IDS[AA_ORDER.index(v[3])]] - lp[GL_IDS[AA_ORDER.index(wt[3])]])
        for v in variants
    ]
    np.testing.assert_allclose(s, ref, atol=1e-5)
    with pytest.raises(ValueError, match="PRISM model"):
        score_variants(less, wt, variants, method="wt_centred_ngl")
    with pytest.raises(ValueError, match="differs from the wild type"):
        score_variants(less, wt, [wt + "A"])
    with pytest.raises(TypeError):
        score_variants("model", wt, variants)  # type: ignore[arg-type]


def test_long_inputs_are_refused_or_batched_smaller(make_model):
    from icml26.prism.score import ATTENTION_BUDGET, rows_per_pass

    model = make_model("prism", max_length=40)
    with pytest.raises(ValueError, match="maximum length of 40"):
        pseudo_log_likelihood(model, "A" * 60)
    with pytest.raises(ValueError, match="maximum length"):
        pseudo_log_likelihood_loop(model, "A" * 60)
    with pytest.raises(ValueError, match="maximum length"):
        score_variants(model, "A" * 60, ["C" + "A" * 59])
    assert rows_per_pass(256, 122, 2) == 256
    long = rows_per_pass(256, 2002, 20)
    assert long == max(1, ATTENTION_BUDGET // (20 * 2002**2)) and long < 256
    assert rows_per_pass(256, 10**5, 20) == 1
    ok = pseudo_log_likelihood(model, "EVQLVESGGG", batch_size=3)
    assert ok.per_position["gl"][0].shape == (10,)
