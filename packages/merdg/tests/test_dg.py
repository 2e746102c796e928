"""MixStyle and RSC, the unimodal DG baselines of the paper preset, at tiny sizes."""

import numpy as np
import pytest
import torch
from torch import nn

from icml26.merdg import CoOccConfig, ModelConfig, TrainConfig, lodo_split, simulate_cooccurrence
from icml26.merdg.batched import Job, train_many
from icml26.merdg.dg import mixstyle, rsc_mask
from icml26.merdg.train import METHODS, Method


def test_mixstyle_mixes_per_sample_statistics():
    torch.manual_seed(0)
    x = torch.randn(40, 16) * torch.linspace(0.5, 3, 40)[:, None] + torch.arange(40.0)[:, None]
    assert mixstyle(x, p=0.0) is x  # never applied
    out = mixstyle(x, p=1.0)
    assert out.shape == x.shape and torch.isfinite(out).all()
    mu_in, mu_out = x.mean(1), out.mean(1)
    assert not torch.allclose(mu_in, mu_out)
    # mixed means lie between the sample's own and another sample's mean
    assert mu_out.min() >= mu_in.min() - 1e-4 and mu_out.max() <= mu_in.max() + 1e-4
    # the normalised content is kept: per-sample standardised vectors are unchanged
    z_in = (x - x.mean(1, keepdim=True)) / x.std(1, keepdim=True)
    z_out = (out - out.mean(1, keepdim=True)) / out.std(1, keepdim=True)
    torch.testing.assert_close(z_in, z_out, rtol=1e-3, atol=1e-3)
    with pytest.raises(ValueError, match="N × C"):
        mixstyle(torch.zeros(3, 4, 5))


def test_rsc_mutes_the_most_responsive_channels_of_a_third_of_the_batch():
    torch.manual_seed(0)
    clf = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Dropout(0.5), nn.Linear(16, 4))
    x, y = torch.randn(30, 12), torch.randint(0, 4, (30,))
    mask = rsc_mask(clf, x, y)
    assert clf.training  # the mode is restored
    muted_rows = (mask == 0).any(1)
    assert 1 <= int(muted_rows.sum()) <= 10  # at most a third of the batch
    assert set((mask[muted_rows] == 0).sum(1).tolist()) == {4}  # a third of 12 channels
    with pytest.raises(ValueError, match="drop fractions"):
        rsc_mask(clf, x, y, drop_f=1.0)


@pytest.mark.parametrize("method", ["fusion+mixstyle", "fusion+rsc"])
def test_dg_recipes_train(method):
    data = simulate_cooccurrence(
        CoOccConfig(per_domain=150), target=3, rng=np.random.default_rng(0)
    )
    split = lodo_split(data, 3, rng=np.random.default_rng(1))
    cfg = TrainConfig(
        epochs=4,
        batch_size=30,
        lr=1e-2,
        model=ModelConfig(encoder_hidden=16, embed_dim=8, proj_dim=8, fusion_hidden=16),
    )
    (res,) = train_many([Job(method, split, seed=0)], cfg, device="cpu")
    assert res.method == method and all(np.isfinite(res.train_loss))
    assert max(res.val_acc) > 0.3  # 6 classes: chance ≈ 0.17


def test_dg_only_on_fusion():
    assert METHODS["fusion+rsc"].dg == "rsc"
    with pytest.raises(ValueError, match="fusion architecture"):
        Method("x", "simmmdg", dg="rsc")
    with pytest.raises(ValueError, match="dg must be one of"):
        Method("x", "fusion", dg="coral")
