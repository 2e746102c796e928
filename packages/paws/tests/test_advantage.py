import math

import numpy as np
import pytest
import torch

from icml26.paws import AdvantageConfig, SegmentAdvantage, fit_advantage, preference_bce

FAST = AdvantageConfig(cap=150, val_patience=10)


def test_bce_on_a_hand_made_pair():
    a1, a2 = torch.tensor([2.0, -1.0]), torch.tensor([0.5, 0.0])
    y = torch.tensor([1.0, 0.0])
    want = -(math.log(1 / (1 + math.exp(-1.5))) + math.log(1 / (1 + math.exp(-1.0)))) / 2
    assert float(preference_bce(a1, a2, y)) == pytest.approx(want, rel=1e-6)


def test_segment_advantage_is_the_sum_of_steps():
    torch.manual_seed(0)
    m = SegmentAdvantage(3, 2, 5)
    rng = np.random.default_rng(0)
    obs, act = rng.random((4, 5, 3)), rng.random((4, 5, 2))
    np.testing.assert_allclose(m.segment(obs, act), m.per_step(obs, act).sum(1), rtol=1e-5)


def test_guard_rejects_single_steps_recut_and_wrong_length():
    m = SegmentAdvantage(3, 2, 20, alignment=20)
    obs, act = np.zeros((2, 20, 3)), np.zeros((2, 20, 2))
    m.segment(obs, act, start=[0, 40])
    with pytest.raises(ValueError, match="single step"):
        m.segment(np.zeros((2, 3)), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="re-cut"):
        m.segment(obs, act, start=[0, 7])
    with pytest.raises(ValueError, match="length 20"):
        m.segment(np.zeros((2, 10, 3)), np.zeros((2, 10, 2)))
    with pytest.raises(ValueError, match="NaN"):
        m.segment(np.full((2, 20, 3), np.nan), act)


def test_fit_learns_the_oracle_preferences(pairs, episodes):
    fit = fit_advantage(pairs, FAST, seed=0, device="cpu")
    assert fit.train_accuracy > 0.75
    assert fit.plateau["steps"] <= 150
    # a fresh copy of the seed gives the same model
    again = fit_advantage(pairs, FAST, seed=0, device="cpu")
    o, a = pairs.segments()
    np.testing.assert_allclose(fit.model.segment(o, a), again.model.segment(o, a), rtol=1e-5)


def test_fit_rejects_non_pairs():
    with pytest.raises(TypeError, match="SegmentPairs"):
        fit_advantage({"obs": 1})


@pytest.mark.slow
def test_transformer_advantage_learns_the_preferences(pairs):
    fit = fit_advantage(pairs, AdvantageConfig(kind="transformer", cap=300), seed=0, device="cpu")
    assert fit.train_accuracy > 0.7
    with pytest.raises(ValueError, match="MLP"):
        fit.model.per_step(*pairs.segments())
