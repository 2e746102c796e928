"""One heatmap cell and the DP step on CUDA (``pytest -m gpu``)."""

import pytest
import torch

from icml26.dpfeature import TrainConfig, evaluate, init_weights, make_multipatch, stack, train


def _cuda():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    return torch.device("cuda")


@pytest.mark.gpu
def test_dp_gd_training_step_and_scoring_on_cuda():
    dev = _cuda()
    g = torch.Generator().manual_seed(0)
    data = stack([make_multipatch(200, 10_000, mu, generator=g) for mu in (8.0, 128.0)]).to(dev)
    w0 = init_weights(10, 10_000, 0.01, batch=(2,), generator=g).to(dev)
    cfg = TrainConfig(method="dp_gd", epsilon=4.0, steps=200, eta=0.5)
    res = train(data, w0, cfg, generator=torch.Generator(device=dev).manual_seed(0))
    assert res.w.device.type == "cuda" and torch.isfinite(res.w).all()
    test = make_multipatch(1000, 10_000, 128.0, generator=g).to(dev)
    err, _ = evaluate(res.w[1], test.x, test.y)
    assert float(err) < 0.5


@pytest.mark.gpu
def test_gd_heatmap_cell_on_cuda():
    dev = _cuda()
    g = torch.Generator().manual_seed(1)
    data = stack([make_multipatch(40, 2000, 24.0, generator=g)]).to(dev)
    w0 = init_weights(10, 2000, 0.01, batch=(1,), generator=g).to(dev)
    res = train(data, w0, TrainConfig(steps=1000, eta=0.5))
    test = make_multipatch(1000, 2000, 24.0, generator=g).to(dev)
    assert float(evaluate(res.w[0], test.x, test.y)[0]) < 0.1
