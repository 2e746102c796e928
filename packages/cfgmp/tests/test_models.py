"""The digits flow network, its checkpoints, the classifier and the data loaders."""

import json

import numpy as np
import pytest
import torch

from icml26.cfgmp import (
    ConditionalVelocityMLP,
    FlowNetConfig,
    cfg,
    load_flow_model,
    sample,
    save_flow_model,
    train_classifier,
    train_flow_matching,
)
from icml26.cfgmp.data import load_digits_data, load_image_array, mixture_reference
from icml26.cfgmp.models.mixture import ring_mixture


def test_flow_matching_training_learns_and_checkpoints_round_trip(tmp_path, close):
    torch.manual_seed(0)
    flow = ring_mixture(4, radius=3.0, std=0.3)
    labels = torch.arange(4).repeat_interleave(256)
    data = flow.sample(labels, torch.Generator().manual_seed(0)).float()
    net = ConditionalVelocityMLP(FlowNetConfig(2, 4, hidden=64, depth=2))
    losses = train_flow_matching(
        net, data, labels, steps=300, batch_size=128, generator=torch.Generator().manual_seed(1)
    )
    assert np.mean(losses[-30:]) < 0.75 * np.mean(losses[:30])
    # conditional samples land near their class mode
    lab = torch.arange(4).repeat(32)
    out = sample(net, torch.randn(128, 2), lab, cfg(1.0), steps=20).x
    dist = (out - flow.means[lab].float()).norm(dim=1)
    assert dist.median() < 1.5
    path = save_flow_model(net, tmp_path / "ckpt")
    assert path.suffix == ".safetensors"
    assert json.loads((tmp_path / "ckpt.json").read_text())["hidden"] == 64
    back = load_flow_model(tmp_path / "ckpt")
    x, t = torch.randn(5, 2), torch.rand(5)
    close(back(x, t, lab[:5]), net(x, t, lab[:5]))
    close(back(x, t, None), net(x, t, None))
    v_c, v_u = net.velocity_pair(x, t, lab[:5])
    close(v_c, net(x, t, lab[:5]))
    close(v_u, net(x, t, None))


def test_network_and_checkpoint_errors(tmp_path):
    net = ConditionalVelocityMLP(FlowNetConfig(2, 3, hidden=8, depth=1))
    with pytest.raises(ValueError, match=r"\(B, 2\)"):
        net(torch.zeros(4, 3), torch.zeros(4))
    with pytest.raises(ValueError, match="labels"):
        net(torch.zeros(4, 2), torch.zeros(4), torch.tensor([0, 1, 2, 7]))
    with pytest.raises(FileNotFoundError):
        load_flow_model(tmp_path / "missing")
    (tmp_path / "bad.safetensors").write_bytes(b"")
    (tmp_path / "bad.json").write_text('{"not": "a config"}')
    with pytest.raises(ValueError, match="config"):
        load_flow_model(tmp_path / "bad")
    with pytest.raises(ValueError, match="label_dropout"):
        train_flow_matching(
            net, torch.zeros(4, 2), torch.zeros(4, dtype=torch.long), label_dropout=1.0
        )


def test_digits_classifier_and_data():
    data = load_digits_data(seed=0)
    assert data.x_train.shape[1] == 64 and data.x_train.min() >= -1 and data.x_train.max() <= 1
    clf = train_classifier(
        data.x_train, data.y_train, steps=200, generator=torch.Generator().manual_seed(0)
    )
    acc = (clf.predict(data.x_test) == data.y_test).float().mean()
    assert acc > 0.9
    assert clf.features(data.x_test[:3]).shape == (3, 128)
    ref, lab = mixture_reference(ring_mixture(3), 5, torch.Generator().manual_seed(0))
    assert ref.shape == (15, 2) and torch.equal(lab, torch.arange(3).repeat_interleave(5))


def test_load_image_array(tmp_path):
    imgs = np.random.default_rng(0).integers(0, 256, size=(4, 8, 8), dtype=np.uint8)
    np.savez(tmp_path / "d.npz", images=imgs, labels=np.arange(4))
    x, y = load_image_array(tmp_path / "d.npz")
    assert x.dtype == np.float32 and x.max() <= 1 and list(y) == [0, 1, 2, 3]
    np.save(tmp_path / "f.npy", np.full((2, 4, 4), 2.0))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        load_image_array(tmp_path / "f.npy")
    with pytest.raises(ValueError, match=r"\.npy or \.npz"):
        load_image_array(tmp_path / "x.png")


def test_adam_minimises_a_quadratic(close):
    from icml26.cfgmp.models.adam import Adam

    p = torch.nn.Parameter(torch.tensor([3.0, -2.0]))
    opt = Adam([p], lr=0.1, total_steps=300)
    for _ in range(300):
        opt.zero_grad()
        ((p - torch.tensor([1.0, 1.0])) ** 2).sum().backward()
        opt.step()
    close(p.detach(), torch.tensor([1.0, 1.0]), atol=1e-3, rtol=0)
    assert opt.current_lr() == pytest.approx(0.0, abs=1e-12)


@pytest.mark.slow  # torch.optim imports the compiler stack: seconds on a cold interpreter
def test_adam_matches_torch_optim(close):
    from icml26.cfgmp.models.adam import Adam

    torch.manual_seed(0)
    a, b = torch.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    b.load_state_dict(a.state_dict())
    ours, ref = Adam(a.parameters(), lr=0.01), torch.optim.Adam(b.parameters(), lr=0.01)
    x = torch.randn(16, 3)
    for _ in range(20):
        for net, opt in ((a, ours), (b, ref)):
            opt.zero_grad()
            net(x).pow(2).sum().backward()
            opt.step()
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        close(pa, pb)
