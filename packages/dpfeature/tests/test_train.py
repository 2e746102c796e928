import math

import pytest
import torch

from icml26.dpfeature import (
    TrainConfig,
    evaluate,
    init_weights,
    make_multipatch,
    noise_multiplier,
    stack,
    train,
)


def _batch(mus, n=16, d=300, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    data = stack([make_multipatch(n, d, mu, generator=g, dtype=dtype) for mu in mus])
    w0 = init_weights(4, d, 0.01, batch=(len(mus),), generator=g, dtype=dtype)
    return data, w0


def test_gd_learns_the_signal_at_high_snr_and_memorises_at_low_snr():
    data, w0 = _batch([1.0, 40.0], n=20, d=600)
    res = train(data, w0, TrainConfig(steps=200, eta=0.5, window=20))
    test = [
        make_multipatch(500, 600, mu, generator=torch.Generator().manual_seed(9))
        for mu in (1.0, 40.0)
    ]
    errs = [float(evaluate(res.w[i], t.x, t.y)[0]) for i, t in enumerate(test)]
    assert errs[1] < 0.05 and errs[0] > 0.3
    ratio = res.history["memorisation"][:, -1] / res.history["signal"][:, -1]
    assert ratio[0] > 1 > ratio[1]
    assert float(res.history["loss"][:, -1].max()) < 0.05  # both fit the training set
    assert res.epsilon == [0.0, 0.0] and not any(res.diverged)


def test_dp_gd_noise_scale_and_achieved_epsilon():
    data, w0 = _batch([5.0], n=16, d=200, dtype=torch.float64)
    cfg = TrainConfig(method="dp_gd", epsilon=4.0, steps=5, clip=0.5, eta=1.0, window=50)
    res = train(data, w0, cfg, generator=torch.Generator().manual_seed(0))
    z = noise_multiplier(4.0, 1e-5, 5)
    assert res.z == pytest.approx(z)
    assert res.epsilon[0] == pytest.approx(4.0, rel=1e-6)  # all 5 budgeted steps taken
    # each step moves W by η(clipped mean + noise); the noise sd per coordinate is z C / n
    step_size = float((res.w - w0).std() / math.sqrt(5))
    assert step_size == pytest.approx(z * 0.5 / 16, rel=0.1)


def test_fused_and_vmap_engines_take_identical_steps():
    data, w0 = _batch([3.0, 9.0], n=8, d=120, dtype=torch.float64)
    for method, eps in (("gd", None), ("dp_gd", 2.0), ("noisy_gd", 2.0)):
        out = []
        for engine in ("fused", "vmap"):
            cfg = TrainConfig(
                method=method, epsilon=eps, steps=6, eta=0.3, clip=0.05, engine=engine
            )
            out.append(train(data, w0, cfg, generator=torch.Generator().manual_seed(1)).w)
        assert torch.allclose(out[0], out[1], atol=1e-9), method


def test_noisy_gd_uses_the_tracked_sensitivity_and_flags_divergence():
    data, w0 = _batch([2.0], n=16, d=300)
    cfg = TrainConfig(method="noisy_gd", epsilon=0.5, steps=50, eta=0.5)
    res = train(data, w0, cfg, generator=torch.Generator().manual_seed(0))
    # unclipped noise ∝ max_i ‖∇ℓ_i‖ feeds back through ReLU³ and blows up at this ε
    assert res.diverged == [True] and res.stop[0]["reason"] == "diverged"
    assert torch.isfinite(res.w).all()  # the last finite weights are kept
    err, loss = evaluate(res.w[0], data.x[0], data.y[0])
    assert math.isfinite(float(err)) and math.isfinite(float(loss))


def test_plateau_rule_stops_runs_and_records_why():
    data, w0 = _batch([30.0], n=10, d=100)
    res = train(data, w0, TrainConfig(steps=5000, eta=0.5, window=10, patience=2, min_delta=0.5))
    assert res.stop[0]["reason"] == "plateau" and res.steps[0] < 5000


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"method": "dp_gd", "epsilon": 0.0}, "epsilon must be positive"),
        ({"method": "dp_gd", "epsilon": 1.0, "delta": 1.0}, r"delta must lie in \(0, 1\)"),
        ({"method": "noisy_gd"}, "needs epsilon"),
        ({"method": "dp_gd", "epsilon": 1.0, "clip": 0.0}, "clip C must be positive"),
        ({"steps": 0}, "steps T must be at least 1"),
        ({"q": 2.0}, "q must be > 2"),
        ({"method": "sgd"}, "method must be one of"),
    ],
)
def test_bad_trainer_settings_are_clear_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TrainConfig(**kwargs)


def test_labels_other_than_plus_minus_one_are_rejected():
    data, w0 = _batch([3.0], n=6, d=50)
    bad = data.__class__(data.x, data.y * 2, data.mu, data.noise, data.signal_patch, 1.0)
    with pytest.raises(ValueError, match=r"\+1 or -1"):
        train(bad, w0, TrainConfig(steps=2))
