"""The regret teacher: oracle segment advantage under a critic fitted on the true rewards."""

import dataclasses

import numpy as np
import pytest
import torch

from icml26.paws import (
    AdvantageConfig,
    CPLConfig,
    Episodes,
    OracleCriticConfig,
    PAWSConfig,
    PolicyConfig,
    behaviour_cloning,
    cpl,
    discounted_returns_to_go,
    filtered_bc,
    fit_advantage,
    fit_oracle_critic,
    fit_paws,
    make_preferences,
    segment_regret,
)
from icml26.paws.reproduce import Config, run

POLICY = PolicyConfig(cap=60, plateau_window=20)
CRITIC = OracleCriticConfig(cap=300)


@pytest.fixture(scope="module")
def critic(episodes):
    return fit_oracle_critic(episodes, CRITIC, seed=0)


def test_returns_to_go_by_hand():
    g = discounted_returns_to_go(np.array([[1.0, 2.0, 3.0]]), 0.5)
    np.testing.assert_allclose(g, [[1 + 0.5 * 2 + 0.25 * 3, 2 + 0.5 * 3, 3.0, 0.0]])


def test_segment_regret_by_hand():
    reward = np.array([[1.0, 2.0, 3.0, 4.0]])
    values = np.array([[10.0, 20.0, 30.0, 40.0, 0.0]])
    gamma = 0.9
    # segment of 2 steps from t = 1: r1 + γ r2 + γ² V(s3) − V(s1)
    got = segment_regret(reward, values, np.array([0]), np.array([1]), 2, gamma)
    assert got[0] == pytest.approx(2 + 0.9 * 3 + 0.81 * 40 - 20)
    # the last segment bootstraps from V(·, H) = 0
    got = segment_regret(reward, values, np.array([0]), np.array([2]), 2, gamma)
    assert got[0] == pytest.approx(3 + 0.9 * 4 - 30)
    with pytest.raises(ValueError, match="inside"):
        segment_regret(reward, values, np.array([0]), np.array([3]), 2, gamma)
    with pytest.raises(ValueError, match="H \\+ 1"):
        segment_regret(reward, values[:, :4], np.array([0]), np.array([0]), 2, gamma)


def test_per_episode_values_would_make_every_segment_advantage_zero(episodes):
    """Why V is a fitted critic: the episode's own return-to-go telescopes to zero."""
    g = discounted_returns_to_go(episodes.reward, 0.99)
    ep = np.repeat(np.arange(episodes.n_episodes), 5)
    st = np.tile(np.arange(0, 100, 20), episodes.n_episodes)
    np.testing.assert_allclose(segment_regret(episodes.reward, g, ep, st, 20, 0.99), 0,
                               atol=1e-9)  # fmt: skip


def test_critic_fits_the_returns_to_go_and_stops_by_plateau(critic, episodes):
    assert critic.r2 > 0.5 and critic.steps <= CRITIC.cap
    v = critic.values(episodes)
    assert v.shape == (episodes.n_episodes, episodes.horizon + 1) and np.all(v[:, -1] == 0)
    g = discounted_returns_to_go(episodes.reward, 0.99)[:, :-1]
    assert np.corrcoef(v[:, :-1].ravel(), g.ravel())[0, 1] > 0.7


def test_regret_labels_match_the_hand_computed_advantage(critic, episodes):
    pairs = make_preferences(episodes, 80, 20, np.random.default_rng(1), teacher="regret",
                             critic=critic)  # fmt: skip
    assert pairs.teacher == "oracle-regret"
    v = critic.values(episodes)
    for i in range(len(pairs)):
        adv = []
        for side in range(2):
            e, t = pairs.episode[i, side], pairs.start[i, side]
            a = sum(0.99**k * float(episodes.reward[e, t + k]) for k in range(20))
            adv.append(a + 0.99**20 * v[e, t + 20] - v[e, t])
        expect = 1.0 if adv[0] > adv[1] else 0.0 if adv[0] < adv[1] else 0.5
        assert pairs.label[i] == expect
    # the same pairs as the return teacher (only the labels differ)
    plain = make_preferences(episodes, 80, 20, np.random.default_rng(1))
    np.testing.assert_array_equal(plain.start, pairs.start)
    np.testing.assert_array_equal(plain.episode, pairs.episode)
    assert np.any(plain.label != pairs.label)


def test_regret_teacher_errors(critic, episodes):
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="needs the oracle critic"):
        make_preferences(episodes, 5, 20, rng, teacher="regret")
    with pytest.raises(ValueError, match="teacher must be"):
        make_preferences(episodes, 5, 20, rng, teacher="advantage")
    with pytest.raises(ValueError, match="regret' only"):
        make_preferences(episodes, 5, 20, rng, critic=critic)
    short = Episodes(obs=episodes.obs[:, :50], act=episodes.act[:, :50],
                     reward=episodes.reward[:, :50], kind=episodes.kind)  # fmt: skip
    with pytest.raises(ValueError, match="horizon"):
        critic.values(short)
    with pytest.raises(TypeError, match="Episodes"):
        fit_oracle_critic(episodes.obs)
    bad = Episodes(obs=episodes.obs, act=episodes.act, kind=episodes.kind,
                   reward=np.where(np.arange(100) == 3, np.nan, episodes.reward))  # fmt: skip
    with pytest.raises(ValueError, match="finite"):
        fit_oracle_critic(bad)
    with pytest.raises(ValueError, match="gamma"):
        OracleCriticConfig(gamma=0.0)
    with pytest.raises(ValueError, match="teacher"):
        Config(teacher="advantage")


def _params(module):
    return torch.cat([p.detach().flatten() for p in module.parameters()]).numpy()


def test_regret_labelled_learners_never_see_rewards_or_the_critic(critic, episodes):
    """No teacher leakage: the learners get the labelled pairs and the episodes; poisoning
    the episodes' rewards after labelling changes no learner, and the pairs carry neither
    rewards nor values."""
    pairs = make_preferences(episodes, 60, 20, np.random.default_rng(1), teacher="regret",
                             critic=critic)  # fmt: skip
    fields = {f.name for f in dataclasses.fields(pairs)}
    assert not fields & {"reward", "ret", "value", "values", "critic", "advantage"}
    poisoned = Episodes(
        obs=episodes.obs,
        act=episodes.act,
        kind=episodes.kind,
        reward=np.random.default_rng(9).normal(size=episodes.reward.shape),
    )
    adv = fit_advantage(pairs, AdvantageConfig(cap=60, val_patience=3), seed=0, device="cpu")
    runs = {
        "BC": lambda ep: behaviour_cloning(ep, POLICY, seed=0, device="cpu").policy,
        "filtered BC": lambda ep: filtered_bc(pairs, POLICY, seed=0, device="cpu").policy,
        "CPL+KL": lambda ep: cpl(pairs, CPLConfig(kl=True), POLICY, episodes=ep, seed=0,
                                 device="cpu").policy,
        "PAWS": lambda ep: fit_paws(pairs, PAWSConfig(policy=POLICY, segments="pairs+unlabelled"),
                                    episodes=ep, advantage=adv, seed=0, device="cpu").policy,
    }  # fmt: skip
    for name, fn in runs.items():
        np.testing.assert_array_equal(_params(fn(episodes)), _params(fn(poisoned)), err_msg=name)
    # while the teacher does read the rewards: other rewards, other labels
    other = make_preferences(poisoned, 60, 20, np.random.default_rng(1), teacher="regret",
                             critic=fit_oracle_critic(poisoned, CRITIC, seed=0))  # fmt: skip
    assert np.any(other.label != pairs.label)


def test_tiny_run_with_the_regret_teacher_records_the_critic(tmp_path):
    cfg = Config(
        episodes=30, n_prefs=(40,), eval_episodes=6, lambda_grid=(), recut_pairs=50,
        methods=("filtered BC", "PAWS"), teacher="regret", critic=CRITIC,
        advantage=AdvantageConfig(cap=60, val_patience=3), policy=PolicyConfig(cap=60),
    )  # fmt: skip
    report = run(cfg, 0, tmp_path)
    (rec,) = [r for r in report.records if r["kind"] == "oracle_critic"]
    assert rec["r2"] > 0.5 and rec["stopped_by"] in ("plateau", "cap")
    assert {r.method for r in report.rows} == {"filtered BC", "PAWS"}
