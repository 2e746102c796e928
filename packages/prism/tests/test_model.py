import numpy as np
import pytest
import torch

from icml26.prism.backbone import RotaryEmbedding
from icml26.prism.losses import LossWeights, prism_loss
from icml26.prism.model import ModelConfig, PrismModel, gated_logits
from icml26.prism.vocab import GL_IDS, NGL_IDS, Tokenizer


def assert_close(a: torch.Tensor, b: torch.Tensor, rtol: float = 1.3e-6, atol: float = 1e-5):
    # torch.testing.assert_close would import torch.distributed.tensor (seconds of CPU)
    assert a.shape == b.shape, (a.shape, b.shape)
    assert torch.allclose(a, b, rtol=rtol, atol=atol), f"max |a - b| = {(a - b).abs().max()}"


def _batch():
    enc = Tokenizer()(["EVQLVESGGGLVQPGGSLRLSCAAS", "QVQLVQSGAEVKKPGASV"])
    return enc.torch()


def test_53_way_distribution_sums_to_one_and_marginalises(make_model):
    model = make_model("prism")
    model.temperature.fill_(0.5)
    ids, attn = _batch()
    out = model(ids, attn)
    p53 = out.log_probs().exp().detach()
    assert_close(p53.sum(-1), torch.ones(p53.shape[:-1]))
    # summing each residue over its two cases gives the tempered 33-way AA distribution
    marg = p53[..., GL_IDS] + p53[..., NGL_IDS]
    lp_aa = torch.log_softmax(out.aa_logits, -1)[..., GL_IDS]
    expect = torch.softmax(lp_aa / 0.5, -1)
    assert_close(marg, expect, rtol=1e-5, atol=1e-6)
    # non-residue columns carry no mass
    others = np.setdiff1d(np.arange(53), np.concatenate([GL_IDS, NGL_IDS]))
    assert float(p53[..., others].max()) == 0.0


def test_at_alpha_one_and_t_one_the_distribution_factorises():
    aa = torch.randn(2, 5, 33)
    m = torch.randn(2, 5)
    alpha = torch.ones(2, 5, 1)
    p = torch.softmax(gated_logits(aa, m, alpha, 1.0), -1)
    p_aa = torch.softmax(aa, -1)[..., GL_IDS]
    p_aa = p_aa / p_aa.sum(-1, keepdim=True)
    # final logits are already normalised log-probs when the AA head puts no mass on specials
    assert_close(p[..., GL_IDS], p_aa * torch.sigmoid(-m)[..., None])
    assert_close(p[..., NGL_IDS], p_aa * torch.sigmoid(m)[..., None])


def test_no_gradient_into_the_origin_head_through_the_gate(make_model):
    model = make_model("prism")
    model.train()
    model.origin_dropout.p = 0.0
    ids, attn = _batch()
    out = model(ids, attn)
    # the 53-way and AA losses alone must leave the origin head untouched
    (out.final_logits.logsumexp(-1).sum() + out.aa_logits.sum()).backward()
    assert (
        model.origin_head.weight.grad is None
        or float(model.origin_head.weight.grad.abs().sum()) == 0
    )
    assert float(model.alpha_head.weight.grad.abs().sum()) > 0
    assert float(model.origin_projection.weight.grad.abs().sum()) > 0
    # while the origin loss reaches it
    model.zero_grad()
    out = model(ids, attn)
    out.origin_logits.sum().backward()
    assert float(model.origin_head.weight.grad.abs().sum()) > 0


def test_dual_heads_give_different_channels_and_losses_run(make_model):
    model = make_model("prism", dual_heads=True)
    ids, attn = _batch()
    out = model(ids, attn)
    lp = out.log_probs()
    gl = torch.log_softmax(lp[..., GL_IDS], -1)
    ngl = torch.log_softmax(lp[..., NGL_IDS], -1)
    assert not torch.allclose(gl, ngl)
    single = make_model("prism")(ids, attn).log_probs()
    assert_close(
        torch.log_softmax(single[..., GL_IDS], -1).detach(),
        torch.log_softmax(single[..., NGL_IDS], -1).detach(),
    )
    labels = torch.where(attn.bool(), ids, -100)
    labels[:, 0] = -100
    ngl_mask = torch.zeros_like(ids, dtype=torch.bool)
    ngl_mask[:, 3] = True
    parts = prism_loss(out, labels, ngl_mask.float(), ngl_mask, None, LossWeights())
    assert set(parts) == {"total", "final", "aa", "origin", "aa_ngl"}
    assert torch.isfinite(parts["total"])


def test_prismless_and_config_validation(make_model):
    less = make_model("prismless")
    ids, attn = _batch()
    out = less(ids, attn)
    assert out.aa_logits.shape[-1] == 33 and out.final_logits is None
    with pytest.raises(ValueError, match="33 ESM-2 tokens"):
        less(torch.tensor([[0, 40, 2]]))
    with pytest.raises(ValueError):
        ModelConfig(kind="bert")
    with pytest.raises(ValueError):
        ModelConfig(d_model=30, n_heads=4)
    with pytest.raises(ValueError):
        PrismModel(ModelConfig(kind="prismless"))
    big = ModelConfig.esm2_35m()
    assert (big.n_layers, big.d_model, big.n_heads) == (12, 480, 20)


def test_rotary_matches_the_rotate_half_formula():
    rot = RotaryEmbedding(8)
    q, k = torch.randn(2, 3, 7, 8), torch.randn(2, 3, 7, 8)
    rq, rk = rot(q, k)
    t = torch.arange(7).float()
    freqs = torch.outer(t, rot.inv_freq)
    emb = torch.cat((freqs, freqs), -1)

    def ref(x):
        x1, x2 = x.chunk(2, -1)
        return x * emb.cos() + torch.cat((-x2, x1), -1) * emb.sin()

    assert_close(rq, ref(q))
    assert_close(rk, ref(k))


def test_conditioning_embeddings_change_the_output(make_model):
    model = make_model("prism", n_v_genes=3, n_j_genes=2, n_regions=8)
    ids, attn = _batch()
    a = model(ids, attn).final_logits
    b = model(
        ids,
        attn,
        v_gene_ids=torch.tensor([0, 1]),
        j_gene_ids=torch.tensor([1, 0]),
        region_ids=torch.full_like(ids, 2),
    ).final_logits
    assert not torch.allclose(a, b)
