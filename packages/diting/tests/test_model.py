import dataclasses

import numpy as np
import pytest
import torch

from icml26.diting import (
    CPMLP,
    MLP,
    CPTransformer,
    Diting,
    DitingConfig,
    TrainConfig,
    dense_weights,
    load_model,
    save_model,
    simulate_fleet,
    train_regressor,
)

SMALL = DitingConfig(early_cycle_threshold=20, charge_discharge_length=8, diting_prototype_cycles=4)


def _batch(B=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(B, 20, 3, 8, generator=g), torch.ones(B, 20)


def test_forward_shape_and_clear_errors():
    torch.manual_seed(0)
    model = Diting(SMALL)
    x, m = _batch()
    assert model(x, m).shape == (3, 1)
    with pytest.raises(ValueError, match="rank 4"):
        model(x[0], m)
    with pytest.raises(ValueError, match="num_var is 3"):
        model(x[:, :, :2], m)
    with pytest.raises(ValueError, match="curve_attn_mask must be"):
        model(x, m[:, :10])
    bad = x.clone()
    bad[0, 0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        model(bad, m)
    with pytest.raises(TypeError, match="torch tensors"):
        model(x.numpy(), m)
    with pytest.raises(ValueError, match="exceeds"):
        DitingConfig(early_cycle_threshold=5, diting_prototype_cycles=8)


def test_nothing_past_the_window_is_read_and_short_windows_work():
    torch.manual_seed(0)
    model = Diting(SMALL)
    x, m = _batch()
    m[:, 2:] = 0  # windows shorter than K = 4
    y = x.clone()
    y[:, 2:] = 100.0 * torch.randn_like(y[:, 2:])
    torch.testing.assert_close(model(x, m), model(y, m))
    for cfg in (
        dataclasses.replace(SMALL, prototype="mean"),
        dataclasses.replace(SMALL, positional=True),
    ):
        assert torch.isfinite(Diting(cfg)(x, m)).all()


def test_safetensors_round_trip(tmp_path):
    torch.manual_seed(0)
    model = Diting(dataclasses.replace(SMALL, learnable_constants=True))
    x, m = _batch()
    save_model(model, tmp_path / "ckpt", extra={"note": "x"})
    loaded, extra = load_model(tmp_path / "ckpt")
    assert extra == {"note": "x"}
    torch.testing.assert_close(model(x, m), loaded(x, m))


def test_training_stops_by_the_plateau_rule_and_lowers_the_loss():
    fleet = simulate_fleet(12, np.random.default_rng(0), snr=5.0, early_cycle_threshold=20,
                           charge_discharge_length=8, prototype_cycles=4)  # fmt: skip
    torch.manual_seed(0)
    model = Diting(SMALL)
    cfg = TrainConfig(max_epochs=6, patience=2, min_window=5, batch_size=16, kde_alpha=1.0)
    res = train_regressor(model, fleet, cfg, seed=0)
    assert res.stopping["reason"] in ("plateau", "cap") and res.stopping["steps"] == len(res.losses)
    assert min(res.losses) < res.losses[0]
    w = dense_weights(fleet.life, 1.0)
    assert abs(w.mean() - 1) < 1e-9 and w.min() > 0


@pytest.mark.parametrize("cls", [MLP, CPMLP, CPTransformer])
def test_batterylife_baselines_respect_the_window(cls):
    torch.manual_seed(0)
    model = cls(20, 3, 8).eval()
    x, m = _batch()
    m[:, 5:] = 0
    y = x.clone()
    y[:, 5:] += 50.0
    out = model(x, m)
    assert out.shape == (3, 1)
    torch.testing.assert_close(out, model(y, m))
    with pytest.raises(ValueError, match="num_var"):
        model(x[:, :, :2], m)
