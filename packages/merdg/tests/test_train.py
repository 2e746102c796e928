"""Training: every recipe runs and learns, same seed same numbers, clear errors."""

import numpy as np
import pytest
import torch

from icml26.merdg import (
    CoOccConfig,
    ModelConfig,
    MultimodalNet,
    TrainConfig,
    lodo_split,
    simulate_cooccurrence,
    train_method,
)
from icml26.merdg.train import METHODS, method_loss


@pytest.fixture(scope="module")
def split():
    data = simulate_cooccurrence(
        CoOccConfig(per_domain=150), target=3, rng=np.random.default_rng(0)
    )
    return lodo_split(data, 3, rng=np.random.default_rng(1))


TINY = TrainConfig(
    epochs=5,
    batch_size=30,
    lr=1e-2,
    model=ModelConfig(
        encoder_hidden=16,
        embed_dim=8,
        proj_hidden=16,
        proj_dim=8,
        fusion_hidden=16,
        trans_hidden=16,
    ),
)


@pytest.mark.parametrize("method", ["fusion", "fusion+mer", "simmmdg", "simmmdg+mer", "unimodal"])
def test_every_recipe_trains_and_beats_chance_on_source(split, method):
    res = train_method(method, split, TINY, seed=0, device="cpu")
    assert res.epochs == len(res.val_acc) == len(res.test_acc) <= 5
    assert res.stopping["reason"] in ("plateau", "cap")
    assert all(np.isfinite(res.train_loss))
    assert max(res.val_acc) > 0.3  # 6 classes: chance ≈ 0.17
    assert res.oracle_test_acc >= res.last_test_acc and res.oracle_test_acc >= res.selected_test_acc


def test_same_seed_same_numbers(split):
    a = train_method("fusion+mer", split, TINY, seed=5, device="cpu")
    b = train_method("fusion+mer", split, TINY, seed=5, device="cpu")
    assert a.train_loss == b.train_loss and a.test_acc == b.test_acc


def test_mer_term_changes_the_objective_only_when_on(split):
    torch.manual_seed(0)
    model = MultimodalNet(split.train.dims, 6, "fusion", TINY.model)
    xs = [torch.as_tensor(x[:30]) for x in split.train.features]
    y = torch.as_tensor(split.train.labels[:30])
    model.eval()  # no dropout: the two losses see the same network
    plain = method_loss(model, METHODS["fusion"], xs, y, TINY)
    reg = method_loss(model, METHODS["fusion+mer"], xs, y, TINY)
    assert float((reg - plain).detach()) != 0.0
    grads = torch.autograd.grad(reg - plain, list(model.encoders.parameters()))
    assert sum(float(g.abs().sum()) for g in grads) > 0  # MER reaches the encoders


def test_model_and_training_errors(split):
    model = MultimodalNet((32, 32), 6, "fusion")
    with pytest.raises(ValueError, match="has 2 modalities"):
        model([torch.zeros(4, 32)])
    with pytest.raises(ValueError, match="same batch length"):
        model([torch.zeros(4, 32), torch.zeros(5, 32)])
    with pytest.raises(ValueError, match="unknown method"):
        train_method("deepall", split, TINY)
    with pytest.raises(ValueError, match="not divisible by the 3 source domains"):
        train_method("fusion", split, TrainConfig(epochs=1, batch_size=64))
