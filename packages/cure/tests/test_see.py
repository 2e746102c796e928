import numpy as np
import pytest
import torch

from icml26.cure import (
    TrainConfig,
    hierarchical_mixture,
    mean_offdiagonal_cosine,
    prototype_energy,
    sample_energy,
    see_term,
)
from icml26.cure.cure import NetConfig
from icml26.cure.stage1 import Stage1Config, train_stage1


def test_energy_matches_hand_computation():
    mu = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    unit = mu / mu.norm(dim=1, keepdim=True)
    c = (unit @ unit.T).numpy()
    want = -0.5 * np.mean(
        [np.log(sum(np.exp(c[i, j] / 0.5) for j in range(3) if j != i)) for i in range(3)]
    )
    assert float(prototype_energy(mu, 0.5)) == pytest.approx(want, rel=1e-6)


def test_minimising_energy_raises_similarity():
    torch.manual_seed(0)
    mu = torch.randn(5, 8, requires_grad=True)
    before = mean_offdiagonal_cosine(mu)
    opt = torch.optim.SGD([mu], lr=0.5)
    for _ in range(20):
        opt.zero_grad()
        prototype_energy(mu).backward()
        opt.step()
    assert mean_offdiagonal_cosine(mu) > before + 0.1


def test_sample_energy_ignores_the_target_logit():
    logits = torch.tensor([[5.0, 1.0, 1.0]])
    a = sample_energy(logits, torch.tensor([0]), 1.0)
    b = sample_energy(torch.tensor([[-9.0, 1.0, 1.0]]), torch.tensor([0]), 1.0)
    assert float(a) == pytest.approx(float(b)) == pytest.approx(-np.log(2 * np.e))


def test_see_term_switches_off_at_the_cap():
    close = torch.tensor([[1.0, 0.0], [0.99, 0.1], [0.98, 0.2]])
    term, active = see_term(close, 0.1, cap=0.5)
    assert not active and float(term) > 0.0  # the restoring term
    grad = torch.autograd.grad(see_term(close.requires_grad_(), 0.1, cap=0.5)[0], close)[0]
    moved = close - 0.1 * grad
    assert mean_offdiagonal_cosine(moved) < mean_offdiagonal_cosine(close)
    far = torch.eye(3)
    term, active = see_term(far, 0.1, cap=0.5)
    assert active and float(term) != 0.0
    with pytest.raises(ValueError):
        see_term(far, -1.0)


def test_cap_holds_in_training_with_a_large_see_weight():
    data = hierarchical_mixture(np.random.default_rng(0), n_per_old=40, n_per_new=20)
    model = NetConfig(hidden=32, dim=16, proj_hidden=32, proj_dim=8).build(32, data.n_classes)
    train = TrainConfig(cap_epochs=15, batch_size=64, patience=100)
    uncapped = NetConfig(hidden=32, dim=16, proj_hidden=32, proj_dim=8).build(32, data.n_classes)
    uncapped.load_state_dict(model.state_dict())
    for net, cap in ((model, 0.3), (uncapped, 1.0)):
        train_stage1(
            net,
            data,
            Stage1Config(lambda_see=20.0, see_cap=cap),
            train,
            torch.Generator().manual_seed(0),
        )
    assert mean_offdiagonal_cosine(uncapped.prototypes()[: data.n_old]) > 0.3 + 0.1
    assert mean_offdiagonal_cosine(model.prototypes()[: data.n_old]) < 0.3 + 0.05
