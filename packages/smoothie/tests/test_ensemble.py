"""The batched ensemble equals the serial training, member by member."""

from dataclasses import replace

import numpy as np
import pytest
import torch

from icml26.smoothie.data import SynonymTask, synonym_task
from icml26.smoothie.ensemble import _Flat, ensemble_forward, train_diffusion_ensemble
from icml26.smoothie.model import Denoiser, DenoiserConfig, TrainConfig, train_diffusion
from icml26.smoothie.reproduce import Config, ensemble_keys, make_spaces, run_task

TASK = SynonymTask(concepts=8, synonyms=2, dim=16, max_len=6, min_len=2, n_train=96, n_test=16)
NET = DenoiserConfig(
    embed_dim=16, hidden=16, heads=2, layers=2, encoder_layers=1, max_len=6, max_src_len=6,
    mlp_ratio=2.0,
)  # fmt: skip
TRAIN = TrainConfig(lr=3e-3, warmup=5, batch_size=32, ema=0.9, window=4, patience=2,
                    min_delta=0.05, cap=30)  # fmt: skip
KEYS = ("smoothie", "embedding", "simplex")


def _setup(seed: int = 3):
    data = synonym_task(TASK, np.random.default_rng(seed))
    spaces = make_spaces(Config(task=TASK, model=NET, train=TRAIN), data)
    args = (data.embeddings, data.train_trg, data.train_src, data.mask(data.train_src))
    return spaces, args


def _models(config: DenoiserConfig = NET, n: int = 3) -> list[Denoiser]:
    out = []
    for i in range(n):
        torch.manual_seed(100 + i)
        out.append(Denoiser(config))
    return out


@pytest.mark.parametrize("embed_dim", [16, 8])
def test_ensemble_forward_equals_each_denoiser(embed_dim):
    cfg = replace(NET, embed_dim=embed_dim)  # 8: the input/source Linears are used too
    models = _models(cfg, 2)
    b, n = 5, 6
    g = torch.Generator().manual_seed(0)
    x, src = torch.randn(2, b, n, embed_dim, generator=g), torch.randn(2, b, n, embed_dim)
    t = torch.rand(2, b, generator=g)
    mask = torch.ones(2, b, n, dtype=torch.bool)
    mask[:, :, 4:] = False
    layout = _Flat(models[0])
    flat = torch.stack([layout.flatten(m) for m in models])
    views = layout.views(flat)
    assert "blocks.0.attn.q+k+v" in views and "blocks.0.gate+up" in views  # fused products
    plain = {k: torch.stack([dict(m.named_parameters())[k].detach() for m in models]) for k in
             layout.names}  # fmt: skip
    with torch.no_grad():
        fused = ensemble_forward(views, cfg, x, t, src, mask)
        unfused = ensemble_forward(plain, cfg, x, t, src, mask)
        for i, model in enumerate(models):
            model.eval()
            ref = model(x[i], t[i], src[i], mask[i])
            torch.testing.assert_close(fused[i], ref, rtol=1e-5, atol=1e-5)
            torch.testing.assert_close(unfused[i], ref, rtol=1e-5, atol=1e-5)


def test_each_member_equals_its_serial_run():
    """30 steps: every member's losses and EMA weights match its own train_diffusion run
    (same seeds, data order, noise, clip, AdamW, warm-up, EMA) to rounding."""
    spaces, args = _setup()
    config = replace(TRAIN, min_delta=0.0, patience=100)  # the 30-step cap
    seeds = [11, 12, 13]
    serial = []
    for key, model, seed in zip(KEYS, _models(), seeds, strict=True):
        res = train_diffusion(spaces[key], model, *args, config, seed=seed)
        serial.append((res, model))
    models = _models()
    results = train_diffusion_ensemble(
        [spaces[k] for k in KEYS], models, *args, config, seeds=seeds
    )
    for (ref, ref_model), res, model in zip(serial, results, models, strict=True):
        assert res.stopping["steps"] == ref.stopping["steps"] == 30
        assert res.stopping["ensemble"] == 3
        assert res.samples == ref.samples  # the member's own data order
        np.testing.assert_allclose(res.losses, ref.losses, rtol=1e-4)
        for (name, a), b in zip(model.state_dict().items(), ref_model.state_dict().values(),
                                strict=True):  # fmt: skip
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5, msg=name)
        for name, a in res.ema.items():
            torch.testing.assert_close(a, ref.ema[name], rtol=1e-4, atol=1e-5)


def test_each_member_stops_by_its_own_rule():
    """A member that stops is snapshotted at its own step; the others go on unaffected."""
    spaces, args = _setup()
    config = replace(TRAIN, cap=200, window=4, patience=1, min_delta=0.05)
    seeds = [21, 22, 23]
    ref_steps = []
    ref_losses = []
    for key, model, seed in zip(KEYS, _models(), seeds, strict=True):
        res = train_diffusion(spaces[key], model, *args, config, seed=seed)
        ref_steps.append(res.stopping["steps"])
        ref_losses.append(res.losses)
    results = train_diffusion_ensemble(
        [spaces[k] for k in KEYS], _models(), *args, config, seeds=seeds
    )
    assert len(set(ref_steps)) > 1  # the members stop at different steps
    for res, steps, losses in zip(results, ref_steps, ref_losses, strict=True):
        assert res.stopping["steps"] == steps and res.stopping["reason"] == "plateau"
        np.testing.assert_allclose(res.losses, losses, rtol=1e-4)
        assert res.cpu_seconds > 0


def test_an_ensemble_of_one_equals_the_serial_run():
    spaces, args = _setup()
    config = replace(TRAIN, cap=10)
    (model,) = _models(n=1)
    ref = train_diffusion(spaces["embedding"], model, *args, config, seed=5)
    (res,) = train_diffusion_ensemble([spaces["embedding"]], _models(n=1), *args, config, seeds=[5])
    np.testing.assert_allclose(res.losses, ref.losses, rtol=1e-5)


def test_ensemble_errors():
    spaces, args = _setup()
    with pytest.raises(ValueError, match="one space and one seed per model"):
        train_diffusion_ensemble([spaces["smoothie"]], _models(n=2), *args, TRAIN, seeds=[1])
    sc = replace(NET, self_conditioning=True)
    with pytest.raises(ValueError, match="self-conditioning"):
        train_diffusion_ensemble(
            [spaces["smoothie"]] * 2, _models(sc, 2), *args, TRAIN, seeds=[1, 2]
        )
    mixed = [*_models(n=1), *_models(replace(NET, layers=4), 1)]
    with pytest.raises(ValueError, match="share one DenoiserConfig"):
        train_diffusion_ensemble([spaces["smoothie"]] * 2, mixed, *args, TRAIN, seeds=[1, 2])
    with pytest.raises(ValueError, match=r"\(M, B, L, d\)"):
        ensemble_forward({}, NET, torch.zeros(2, 3, 4), None)


def test_run_task_trains_the_spaces_as_one_ensemble(monkeypatch):
    """The reproduction's rows with the ensemble equal those of serial training (to
    rounding: the same stopping steps, accuracies within a few test tokens)."""
    monkeypatch.delenv("ICML26_SMOOTHIE_WORKERS", raising=False)
    cfg = Config(task=TASK, model=NET, train=replace(TRAIN, cap=12), steps=3,
                 methods=("smoothie", "embedding", "copy"), mbr=0)  # fmt: skip
    assert ensemble_keys(cfg) == ("smoothie", "embedding")
    assert ensemble_keys(replace(cfg, ensemble=False)) == ()
    data = synonym_task(TASK, np.random.default_rng(5))
    rows, records = run_task(cfg, data, 0, "S=2")
    ref_rows, _ = run_task(replace(cfg, ensemble=False), data, 0, "S=2")
    assert [r.method for r in rows] == [r.method for r in ref_rows]
    for a, b in zip(rows, ref_rows, strict=True):
        steps = [getattr(r.metrics.get("train_steps"), "mean", None) for r in (a, b)]
        assert steps[0] == steps[1]
        acc, ref = a.metrics["concept_accuracy"].mean, b.metrics["concept_accuracy"].mean
        assert abs(acc - ref) < 5
    assert [r["stopping"].get("ensemble") for r in records] == [2, 2, None]
