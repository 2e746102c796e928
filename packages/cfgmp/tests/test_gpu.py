"""GPU runs at small size: a training step, sampling and scoring on CUDA (``gpu`` marker)."""

import sys
from pathlib import Path

import pytest
import torch

from icml26.cfgmp import ConditionalVelocityMLP, FlowNetConfig, cfg_mp, cfg_mp_plus, sample
from icml26.cfgmp.data import load_digits_data
from icml26.cfgmp.diffusers_adapter import sample_dit
from icml26.cfgmp.metrics import frechet_distance
from icml26.cfgmp.models.classifier import train_classifier
from icml26.cfgmp.models.flownet import train_flow_matching

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]


def test_train_sample_and_score_on_cuda():
    data = load_digits_data()
    torch.manual_seed(0)
    net = ConditionalVelocityMLP(FlowNetConfig(64, 10, hidden=64, depth=2)).cuda()
    losses = train_flow_matching(
        net, data.x_train, data.y_train, steps=200, batch_size=64, plateau_window=50
    )
    assert next(net.parameters()).is_cuda and losses[-1] < losses[0]
    labels = torch.arange(10, device="cuda").repeat_interleave(5)
    noise = torch.randn(50, 64, device="cuda")
    res = sample(net, noise, labels, cfg_mp_plus(4.0), steps=10, diagnostics=True)
    assert res.x.is_cuda and torch.isfinite(res.x).all() and res.nfe == 44
    clf = train_classifier(data.x_train, data.y_train, steps=50).cuda()
    with torch.no_grad():
        fd = frechet_distance(
            clf.features(res.x.clamp(-1, 1)).cpu(), clf.features(data.x_test.cuda()).cpu()
        )
    assert fd > 0


def test_official_dit_loop_on_cuda():
    sys.path.insert(0, str(Path(__file__).parent))
    from test_dit_official import AnalyticDiT, _official_loop

    model = AnalyticDiT()
    labels = torch.tensor([3, 7])
    noise = torch.randn(2, 4, 4, 4, generator=torch.Generator().manual_seed(0))
    ref = _official_loop(model, noise, labels, 4.0, k_iter=2)
    ours = sample_dit(model.cuda(), labels.cuda(), guider=cfg_mp(4.0), noise=noise.cuda())
    assert ours.x.is_cuda and ours.nfe == 44
    assert float((ours.x.cpu() - ref).abs().max()) < 1e-4
