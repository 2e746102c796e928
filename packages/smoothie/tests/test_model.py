"""Denoiser, training loop, sampler, checkpoints and the baselines at tiny size."""

import numpy as np
import pytest
import torch

from icml26.smoothie import (
    ArctanSchedule,
    Autoregressive,
    Denoiser,
    DenoiserConfig,
    EmbeddingSpace,
    MaskedDiffusion,
    SimplexSpace,
    SmoothieSpace,
    SynonymTask,
    TrainConfig,
    cut_at_eos,
    distinct_rate,
    fit_sigmas,
    load_checkpoint,
    mbr_select,
    sample,
    save_checkpoint,
    synonym_task,
    train_diffusion,
)
from icml26.smoothie.evaluation import concept_accuracy, corpus_bleu

CFG = DenoiserConfig(
    embed_dim=16,
    hidden=16,
    heads=2,
    layers=2,
    encoder_layers=1,
    max_len=6,
    max_src_len=6,
    mlp_ratio=2.0,
)


@pytest.fixture(scope="module")
def data():
    task = SynonymTask(concepts=8, synonyms=2, dim=16, max_len=6, min_len=2, n_train=512, n_test=32)
    return synonym_task(task, np.random.default_rng(0))


@pytest.fixture(scope="module")
def space(data):
    smin, smax = fit_sigmas(data.embeddings)
    return SmoothieSpace(ArctanSchedule(sigma_min=smin, sigma_max=smax))


def _model(seed=0, **kw):
    torch.manual_seed(seed)
    return Denoiser(CFG, **kw)


def test_denoiser_shapes_and_length_error(data):
    m = _model()
    x = torch.randn(3, 6, 16)
    src = data.embeddings[data.test_src[:3]]
    out = m(x, torch.rand(3), src=src, src_mask=data.mask(data.test_src[:3]))
    assert out.shape == (3, 6, 16)
    with pytest.raises(ValueError, match="exceeds max_len 6"):
        m(torch.randn(3, 7, 16), torch.rand(3), src=src)
    with pytest.raises(ValueError, match="layers must be even"):
        DenoiserConfig(layers=3)


@pytest.mark.parametrize("space_cls", [EmbeddingSpace, SimplexSpace])
def test_zero_noise_sampler_is_deterministic(data, space, space_cls):
    for sp in (space, space_cls()):
        m = _model()
        kw = {
            "length": 6,
            "src": data.test_src[:4],
            "src_mask": data.mask(data.test_src[:4]),
            "steps": 5,
            "noise_scale": 0.0,
        }
        a = sample(sp, m, data.embeddings, generator=torch.Generator().manual_seed(1), **kw)
        b = sample(sp, m, data.embeddings, generator=torch.Generator().manual_seed(1), **kw)
        assert torch.equal(a, b) and a.shape == (4, 6)


def test_sampler_errors(data, space):
    m = _model()
    with pytest.raises(ValueError, match="N must be an integer ≥ 1"):
        sample(space, m, data.embeddings, length=6, src=data.test_src[:2], steps=0)
    with pytest.raises(ValueError, match="length must lie in"):
        sample(space, m, data.embeddings, length=7, src=data.test_src[:2], steps=2)
    with pytest.raises(ValueError, match="needs `src`"):
        sample(space, m, data.embeddings, length=6, batch_size=2, steps=2)


def test_checkpoint_round_trip(tmp_path, data):
    m = _model(3)
    path = save_checkpoint(m, tmp_path / "m.safetensors")
    back = load_checkpoint(path)
    x, t = torch.randn(2, 6, 16), torch.rand(2)
    src = data.embeddings[data.test_src[:2]]
    m.eval()
    assert torch.equal(m(x, t, src=src), back(x, t, src=src))
    assert back.config == m.config
    (tmp_path / "junk.safetensors").write_bytes(b"not a file")
    with pytest.raises(Exception):  # noqa: B017 - safetensors' own header error
        load_checkpoint(tmp_path / "junk.safetensors")


def test_decoding_stops_at_eos():
    assert cut_at_eos(torch.tensor([[5, 6, 1, 7], [1, 2, 3, 4], [2, 3, 4, 5]]), [1]) == [
        [5, 6],
        [],
        [2, 3, 4, 5],
    ]


def test_mbr_picks_the_consensus():
    cands = [[1, 2, 3, 4], [1, 2, 3, 4], [9, 8, 7, 6], [1, 2, 3, 5]]
    assert mbr_select(cands) in (0, 1)
    with pytest.raises(ValueError):
        mbr_select([])


def test_metrics_on_known_outputs(data):
    ref = data.test_trg
    assert concept_accuracy(ref, ref, data.concept_of, data.vocab.pad_id) == 1.0
    assert corpus_bleu(ref, ref, [data.vocab.eos_id]) == pytest.approx(100.0)
    collapsed = torch.full_like(ref, 2)
    assert distinct_rate(collapsed, [data.vocab.eos_id]) < 0.5
    assert concept_accuracy(collapsed, ref, data.concept_of, data.vocab.pad_id) < 0.3


def test_self_conditioning_runs_for_every_space(data, space):
    cfg = DenoiserConfig(**{**CFG.__dict__, "self_conditioning": True})
    for sp in (space, EmbeddingSpace(), SimplexSpace()):
        torch.manual_seed(0)
        m = Denoiser(cfg)
        res = train_diffusion(
            sp,
            m,
            data.embeddings,
            data.train_trg,
            data.train_src,
            data.mask(data.train_src),
            TrainConfig(batch_size=8, cap=2, warmup=1, window=1),
            seed=0,
        )
        assert res.stopping["steps"] == 2
        out = sample(sp, m, data.embeddings, length=6, src=data.test_src[:2], steps=2)
        assert out.shape == (2, 6)


@pytest.mark.slow  # 200 steps: about 10 CPU-seconds, much more wall time on a busy machine
def test_training_stops_by_the_plateau_rule_and_learns(data, space):
    """The toy task trains in the Smoothie space without collapse (a short, capped run)."""
    m = _model(1)
    cfg = TrainConfig(
        lr=3e-3, warmup=20, batch_size=32, ema=0.9, window=20, patience=2, min_delta=0.05, cap=200
    )
    res = train_diffusion(
        space,
        m,
        data.embeddings,
        data.train_trg,
        data.train_src,
        data.mask(data.train_src),
        cfg,
        seed=0,
    )
    assert res.stopping["reason"] in ("plateau", "cap")
    assert np.mean(res.losses[-20:]) < 0.5 * np.mean(res.losses[:20])
    out = sample(
        space,
        m,
        data.embeddings,
        length=6,
        src=data.test_src,
        src_mask=data.mask(data.test_src),
        steps=10,
        generator=torch.Generator().manual_seed(0),
    )
    acc = concept_accuracy(out, data.test_trg, data.concept_of, data.vocab.pad_id)
    assert acc > 0.3  # chance is about 1/8 on content positions
    assert distinct_rate(out, [data.vocab.eos_id]) > 0.5


def test_baselines_train_and_sample(data):
    cfg = TrainConfig(
        lr=3e-3, warmup=5, batch_size=32, ema=0.0, window=5, patience=1, min_delta=0.0, cap=10
    )
    src, mask = data.train_src, data.mask(data.train_src)
    mdlm = MaskedDiffusion(CFG, data.embeddings)
    res = mdlm.fit(data.train_trg, src, mask, cfg, seed=0)
    assert res.stopping["steps"] <= 10
    out = mdlm.sample(
        length=6,
        src=data.test_src[:4],
        src_mask=data.mask(data.test_src[:4]),
        steps=4,
        generator=torch.Generator().manual_seed(0),
    )
    assert out.shape == (4, 6) and (out < len(data.vocab)).all()  # nothing left masked
    with pytest.raises(ValueError, match="N must be"):
        mdlm.sample(length=6, src=data.test_src[:4], steps=0)
    ar = Autoregressive(CFG, data.embeddings)
    ar.fit(data.train_trg, src, mask, cfg, seed=0)
    out = ar.sample(length=6, src=data.test_src[:4], src_mask=data.mask(data.test_src[:4]))
    assert out.shape == (4, 6)
    assert np.isfinite(ar.nll(data.test_trg, data.test_src, data.mask(data.test_src)))


def test_library_scores_match_identity_and_disagreement():
    pytest.importorskip("sacrebleu")
    pytest.importorskip("rouge_score")
    from icml26.smoothie.evaluation import library_scores

    ref = torch.tensor([[2, 3, 4, 5, 6, 1, 0], [7, 8, 9, 10, 1, 0, 0]])
    same = library_scores(ref, ref, [1])
    assert same["sacrebleu"] == pytest.approx(100.0) and same["rouge_l"] == pytest.approx(100.0)
    other = library_scores(torch.full_like(ref, 11), ref, [1])
    assert other["sacrebleu"] == pytest.approx(0.0) and other["rouge_l"] == pytest.approx(0.0)
    concept_of = torch.tensor([-2, -1] + [i // 2 for i in range(10)])  # synonyms in pairs
    syn = library_scores(
        torch.tensor([[3, 2, 5, 4, 7, 1, 0]]),
        torch.tensor([[2, 3, 4, 5, 6, 1, 0]]),
        [1],
        concept_of,
    )
    assert syn["sacrebleu"] == pytest.approx(100.0)


PINNED_LOSSES = [1.1245099306106567, 1.1732792854309082, 0.9874715209007263, 0.9455106854438782]


def _short(cap=8):
    return TrainConfig(lr=3e-3, warmup=2, batch_size=16, ema=0.9, window=4, patience=1, cap=cap)


def test_trained_embeddings_losses_are_finite_and_differentiable(data, space):
    """The official two extra losses: a decoder NLL at small t with logits
    (softmax(x_t) E) E^T, and a t = T loss that is zero when every position's input is
    the same; both reach E."""
    from icml26.smoothie.model import embedding_losses

    emb = data.embeddings.clone().requires_grad_(True)
    tokens = data.train_trg[:16]
    nll, t_t = embedding_losses(space, emb, tokens, torch.Generator().manual_seed(0))
    assert torch.isfinite(nll) and torch.isfinite(t_t)
    assert 0 < nll.item() < 2 * np.log(emb.shape[0])
    assert t_t.item() >= 0
    (g,) = torch.autograd.grad(nll + t_t, emb)
    assert torch.isfinite(g).all() and float(g.abs().sum()) > 0
    # a constant sequence batch gives the same input everywhere: the t = T loss vanishes
    same = torch.full_like(tokens, int(tokens[0, 0]))
    _, zero = embedding_losses(space, emb, same)
    assert zero.item() < 1e-10
    with pytest.raises(ValueError, match="Smoothie space"):
        embedding_losses(EmbeddingSpace(), emb, tokens)


def test_train_embeddings_changes_the_table_and_the_default_path_is_unchanged(data, space):
    args = (data.embeddings, data.train_trg, data.train_src, data.mask(data.train_src))
    base = _model(3)
    ref = train_diffusion(space, base, *args, _short(), seed=0)
    again = _model(3)
    off = train_diffusion(space, again, *args, _short(), seed=0, train_embeddings=False)
    assert off.losses == ref.losses and off.embeddings is None and not off.extra_losses
    # the same run before trained embeddings existed (0.5.0 first pass), to 1e-6
    np.testing.assert_allclose(ref.losses[:4], PINNED_LOSSES, rtol=1e-6)
    total = float(sum(p.double().sum() for p in base.state_dict().values()))
    assert total == pytest.approx(151.69818947262502, rel=1e-6)
    for a, b in zip(base.state_dict().values(), again.state_dict().values(), strict=True):
        assert torch.equal(a, b)

    before = data.embeddings.clone()
    joint = _model(3)
    res = train_diffusion(space, joint, *args, _short(), seed=0, train_embeddings=True)
    assert torch.equal(data.embeddings, before)  # the input table is not modified
    assert res.embeddings is not None and res.embeddings.shape == before.shape
    assert float((res.embeddings - before).abs().max()) > 1e-4  # E was trained
    assert np.isfinite(res.losses).all() and len(res.losses) == res.stopping["steps"]
    for k in ("decoder_nll", "t_T_loss"):
        assert len(res.extra_losses[k]) == len(res.losses)
        assert np.isfinite(res.extra_losses[k]).all()
    # the x0-MSE is part of the total: the total exceeds the two extra terms
    total_extra = np.add(res.extra_losses["decoder_nll"], res.extra_losses["t_T_loss"])
    assert (np.asarray(res.losses) > total_extra).all()
    # the denoiser weights are the EMA's (it loaded the denoiser part of the EMA state)
    assert set(joint.state_dict()) == set(base.state_dict())
    kw = {"length": 6, "src": data.test_src[:4], "src_mask": data.mask(data.test_src[:4])}
    kw["steps"] = 4
    out = sample(space, joint, res.embeddings, src_embeddings=data.embeddings, **kw)
    assert out.shape == (4, 6)
    with pytest.raises(ValueError, match="rows"):
        sample(space, joint, res.embeddings, src_embeddings=data.embeddings[:-1], **kw)
    with pytest.raises(ValueError, match="Smoothie space"):
        train_diffusion(SimplexSpace(), _model(3), *args, _short(2), seed=0, train_embeddings=True)
