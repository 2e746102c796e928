import numpy as np
import pytest
import torch

from icml26.prism.adamw import AdamW
from icml26.prism.checkpoint import load_checkpoint, save_checkpoint
from icml26.prism.losses import (
    IGNORE,
    binary_focal_loss,
    focal_loss,
    labels_53,
    region_balanced_focal_loss,
)
from icml26.prism.masking import MaskingConfig, mask_tokens
from icml26.prism.model import ModelConfig, build_model
from icml26.prism.score import pseudo_log_likelihood, score_variants
from icml26.prism.train import TrainConfig, encode_repertoire, lr_lambda, train
from icml26.prism.vocab import GL_TO_NGL, MASK


def assert_close(a: torch.Tensor, b: torch.Tensor, rtol: float = 1.3e-6, atol: float = 1e-5):
    # torch.testing.assert_close would import torch.distributed.tensor (seconds of CPU)
    assert a.shape == b.shape, (a.shape, b.shape)
    assert torch.allclose(a, b, rtol=rtol, atol=atol), f"max |a - b| = {(a - b).abs().max()}"


def test_region_specific_masking(world):
    _, rep = world
    enc = encode_repertoire(rep)
    gen = torch.Generator().manual_seed(0)
    mb = mask_tokens(
        enc.input_ids,
        enc.residue,
        enc.regions,
        enc.ngl,
        MaskingConfig(base=0.15, cdr=0.5, fr=0.1),
        gen,
    )
    cdr = torch.isin(enc.regions, torch.tensor([1, 3, 5]))
    fr = torch.isin(enc.regions, torch.tensor([0, 2, 4, 6]))
    assert mb.selected[cdr].float().mean() == pytest.approx(0.5, abs=0.03)
    assert mb.selected[fr].float().mean() == pytest.approx(0.1, abs=0.02)
    assert not mb.selected[~enc.residue].any()
    sel = mb.selected
    assert (mb.labels_aa[sel] == enc.input_ids[sel]).all() and (mb.labels_aa[~sel] == IGNORE).all()
    assert (mb.labels_origin[sel] == enc.ngl[sel].float()).all()
    assert (mb.labels_origin[~sel] == -1).all()
    assert (mb.input_ids[sel] == MASK).float().mean() == pytest.approx(0.8, abs=0.03)
    assert int(mb.input_ids.max()) < 33  # the input is always uppercase


def test_losses():
    torch.manual_seed(0)
    logits = torch.randn(4, 6, 53)
    y = torch.randint(0, 53, (4, 6))
    y[0, 0] = IGNORE
    # γ = 0 focal loss is cross-entropy
    valid = y != IGNORE
    ce = torch.nn.functional.cross_entropy(logits[valid], y[valid])
    assert_close(focal_loss(logits, y, gamma=0.0), ce)
    assert focal_loss(logits, y, gamma=2.0) < ce
    # NGL weighting is a weighted mean
    ngl = torch.zeros(4, 6, dtype=torch.bool)
    ngl[1] = True
    lw = focal_loss(logits, y, gamma=0.0, ngl=ngl, ngl_weight=3.0)
    per = torch.nn.functional.cross_entropy(logits[valid], y[valid], reduction="none")
    w = torch.where(ngl[valid], 3.0, 1.0)
    assert_close(lw, (per * w).sum() / w.sum())
    regions = torch.tensor([[1, 1, 0, 0, 5, 2]] * 4)
    rb = region_balanced_focal_loss(logits, y, regions, gamma=0.0, cdr_multiplier=2.0)
    cdr = valid & torch.isin(regions, torch.tensor([1, 3, 5]))
    fr = valid & ~torch.isin(regions, torch.tensor([1, 3, 5]))
    ref = 0.5 * 2 * torch.nn.functional.cross_entropy(logits[cdr], y[cdr]) + 0.5 * (
        torch.nn.functional.cross_entropy(logits[fr], y[fr])
    )
    assert_close(rb, ref)
    t = torch.tensor([1.0, 0.0, -1.0])
    x = torch.tensor([2.0, -1.0, 5.0])
    bce = torch.nn.functional.binary_cross_entropy_with_logits(x[:2], t[:2], reduction="none")
    p_t = torch.tensor([torch.sigmoid(x[0]), 1 - torch.sigmoid(x[1])])
    assert_close(binary_focal_loss(x, t), (0.5 * (1 - p_t) ** 2 * bce).mean())
    up = next(iter(GL_TO_NGL))
    lab = labels_53(torch.tensor([up, up, IGNORE]), torch.tensor([True, False, True]))
    assert lab.tolist() == [GL_TO_NGL[up], up, IGNORE]


def test_schedule_and_config():
    f = lr_lambda(10, 100)
    assert f(0) == pytest.approx(0.1) and f(9) == pytest.approx(1.0)
    assert f(55) == pytest.approx(0.5, abs=0.01) and f(100) == pytest.approx(0.0, abs=1e-9)
    with pytest.raises(ValueError):
        TrainConfig(steps=0)
    with pytest.raises(ValueError):
        MaskingConfig(cdr=1.5)
    assert TrainConfig.finetune().weights.ngl_alpha == 3.0
    assert TrainConfig.pretrain().masking.cdr == 0.35


def test_training_lowers_the_loss_and_sets_the_temperature(world, tiny_config):
    _, rep = world
    torch.manual_seed(0)
    model = build_model(tiny_config)
    cfg = TrainConfig(steps=30, batch_size=16, lr=3e-3, warmup_steps=3, temperature_warmup=10)
    res = train(model, rep, cfg, seed=0, device="cpu")
    assert len(res.losses) == 30
    assert np.mean(res.losses[-5:]) < np.mean(res.losses[:5])
    assert float(model.temperature) == pytest.approx(0.5)
    assert res.tokens_per_second > 0
    less = build_model(tiny_config.replace(kind="prismless"))
    res2 = train(less, rep, cfg.replace(steps=5), seed=0, device="cpu")
    assert len(res2.losses) == 5 and np.isfinite(res2.losses).all()


@pytest.mark.parametrize("kind", ["prism", "prismless"])
def test_checkpoint_round_trip_reproduces_scores(tmp_path, kind, make_model):
    model = make_model(kind)
    model.eval()
    seqs = ["EVQLVESGGGLVqPGGSLRL", "QVQLVQSGAEVKKPGASV"]
    wt = "EVQLVESGGGLVQPGGSLRL"
    before = pseudo_log_likelihood(model, seqs).per_position
    s_before = score_variants(model, wt, [wt[:2] + "W" + wt[3:]])
    save_checkpoint(model, tmp_path / "ckpt")
    again = load_checkpoint(tmp_path / "ckpt")
    after = pseudo_log_likelihood(again, seqs).per_position
    for mode in before:
        for a, b in zip(before[mode], after[mode], strict=True):
            np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(s_before, score_variants(again, wt, [wt[:2] + "W" + wt[3:]]))
    with pytest.raises(FileNotFoundError):
        load_checkpoint(tmp_path / "missing")
    (tmp_path / "ckpt" / "config.json").write_text('{"format": "other"}')
    with pytest.raises(ValueError, match="format"):
        load_checkpoint(tmp_path / "ckpt")


def test_adamw_first_steps_by_hand():
    p = torch.nn.Parameter(torch.tensor([1.0, -2.0]))
    opt = AdamW([p], lr=0.1, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.5)
    g = torch.tensor([0.5, -4.0])
    p.grad = g.clone()
    opt.step()
    # step 1: bias-corrected m/sqrt(v) = g/|g|; decay shrinks θ by lr·λ first
    expect = torch.tensor([1.0, -2.0]) * (1 - 0.1 * 0.5) - 0.1 * torch.sign(g)
    assert_close(p.detach(), expect)
    p.grad = g.clone()
    opt.step()
    m = 0.9 * 0.1 * g + 0.1 * g
    v = 0.99 * 0.01 * g**2 + 0.01 * g**2
    expect = expect * (1 - 0.05) - 0.1 * (m / (1 - 0.81)) / ((v / (1 - 0.99**2)).sqrt() + 1e-8)
    assert_close(p.detach(), expect)
    with pytest.raises(ValueError):
        AdamW([p], lr=0.0)


@pytest.mark.slow
def test_adamw_matches_torch_adamw():
    torch.manual_seed(0)
    a = torch.nn.Linear(4, 3)
    b = torch.nn.Linear(4, 3)
    b.load_state_dict(a.state_dict())
    ours = AdamW(a.parameters(), lr=1e-2, weight_decay=0.01)
    ref = torch.optim.AdamW(b.parameters(), lr=1e-2, weight_decay=0.01)
    for i in range(20):
        x = torch.randn(8, 4)
        for net, opt in ((a, ours), (b, ref)):
            opt.zero_grad()
            net(x).pow(2).sum().backward()
            if i == 10:  # a schedule changes the rate between steps
                if opt is ours:
                    opt.lr = 5e-3
                else:
                    opt.param_groups[0]["lr"] = 5e-3
            opt.step()
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        assert_close(pa.detach(), pb.detach(), rtol=1e-5, atol=1e-6)


def test_global_batch_sets_the_accumulation_per_world_size(world):
    cfg = TrainConfig.pretrain(global_batch=8192)
    assert (cfg.accumulation(1), cfg.accumulation(4)) == (32, 8)
    assert TrainConfig(batch_size=4, grad_accumulation=3).accumulation(2) == 3
    with pytest.raises(ValueError, match="multiple"):
        TrainConfig.pretrain(global_batch=8192).accumulation(3)
    with pytest.raises(ValueError, match="global_batch"):
        TrainConfig(batch_size=64, global_batch=100)
    from icml26.prism.reproduce import PRESETS

    paper = PRESETS["paper"]
    assert (paper.pretrain.steps, paper.finetune.steps) == (10_000, 15_000)
    assert paper.pretrain.global_batch == paper.finetune.global_batch == 8192
    # one process: 2 updates of 2 accumulated batches of 4 -> 16 samples seen
    _, rep = world
    torch.manual_seed(0)
    model = build_model(ModelConfig.tiny(d_model=16, d_ff=32, n_layers=1))
    res = train(
        model, rep, TrainConfig(steps=2, batch_size=4, warmup_steps=0, global_batch=8), device="cpu"
    )
    assert len(res.losses) == 2 and res.world_size == 1 and len(res.samples) == 16
