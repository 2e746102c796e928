import dataclasses

import numpy as np
import pytest
import torch

from icml26.paws import (
    AdvantageConfig,
    CPLConfig,
    Episodes,
    PAWSConfig,
    PIQLConfig,
    PolicyConfig,
    behaviour_cloning,
    biased_bce,
    cpl,
    evaluate_policy,
    filtered_bc,
    fit_advantage,
    fit_paws,
    fit_weighted_mle,
    piql_lite,
)

POLICY = PolicyConfig(cap=60, plateau_window=20)
ADV = AdvantageConfig(cap=60, val_patience=3)


@pytest.fixture(scope="module")
def advantage(pairs):
    return fit_advantage(pairs, ADV, seed=0, device="cpu")


def _params(module):
    return torch.cat([p.detach().flatten() for p in module.parameters()]).numpy()


def test_every_step_of_a_segment_shares_one_weight(pairs, advantage):
    cfg = PAWSConfig(policy=POLICY, neff_fraction=0.2)
    res = fit_paws(pairs, cfg, advantage=advantage, seed=0, device="cpu")
    w = res.step_weights
    assert w.shape == (2 * len(pairs), pairs.length)
    assert np.all(w == w[:, :1]) and res.weight_per_step_sd_within_segment == 0.0
    # the segment weight is exp(A(τ)/λ) of the segment's sum, up to the normalisation
    obs, act = pairs.segments()
    adv = advantage.model.segment(obs, act)
    expect = np.exp((adv - adv.max()) / res.temperature.lam)
    np.testing.assert_allclose(w[:, 0], expect / expect.mean(), rtol=1e-6)
    assert abs(res.temperature.n_eff - 0.2 * len(pairs)) <= 0.01 * 0.2 * len(pairs)
    ablation = fit_paws(pairs, dataclasses.replace(cfg, weighting="step"), advantage=advantage,
                        seed=0, device="cpu")  # fmt: skip
    assert ablation.weight_per_step_sd_within_segment > 0


def test_pairs_plus_unlabelled_segments(pairs, episodes, advantage):
    cfg = PAWSConfig(policy=POLICY, segments="pairs+unlabelled")
    res = fit_paws(pairs, cfg, episodes=episodes, advantage=advantage, seed=0, device="cpu")
    assert res.n_segments == 2 * len(pairs) + episodes.n_episodes * 5
    with pytest.raises(ValueError, match="episodes"):
        fit_paws(pairs, cfg, advantage=advantage, device="cpu")


def test_poisoned_rewards_leave_every_learner_unchanged(pairs, episodes, advantage):
    poisoned = Episodes(
        obs=episodes.obs,
        act=episodes.act,
        kind=episodes.kind,
        reward=np.random.default_rng(9).normal(size=episodes.reward.shape) * 1e6,
    )
    runs = {
        "BC": lambda ep: behaviour_cloning(ep, POLICY, seed=0, device="cpu").policy,
        "P-IQL-lite": lambda ep: piql_lite(pairs, ep, PIQLConfig(), POLICY, reward_model=advantage,
                                           seed=0, device="cpu")[0].policy,
        "CPL+KL": lambda ep: cpl(pairs, CPLConfig(kl=True), POLICY, episodes=ep, seed=0,
                                 device="cpu").policy,
        "PAWS": lambda ep: fit_paws(pairs, PAWSConfig(policy=POLICY, segments="pairs+unlabelled"),
                                    episodes=ep, advantage=advantage, seed=0, device="cpu").policy,
    }  # fmt: skip
    for name, fn in runs.items():
        np.testing.assert_array_equal(_params(fn(episodes)), _params(fn(poisoned)), err_msg=name)


def test_cpl_biased_bce_by_hand():
    a1, a2, y = torch.tensor([1.0]), torch.tensor([3.0]), torch.tensor([1.0])
    # y = 1: the first is preferred: softplus(−(1 − 0.5·3))
    assert float(biased_bce(a1, a2, y, 0.5)) == pytest.approx(float(np.log1p(np.exp(0.5))))
    with pytest.raises(ValueError, match="bias"):
        CPLConfig(bias=0.0)


def test_filtered_bc_uses_only_preferred_segments(pairs):
    obs, _act = pairs.preferred()
    assert obs.shape[0] == int(np.sum(pairs.label != 0.5))
    fit = filtered_bc(pairs, POLICY, seed=0, device="cpu")
    assert fit.plateau["steps"] <= POLICY.cap


def test_weighted_mle_rejects_bad_input():
    obs = np.zeros((10, 3), np.float32)
    act = np.zeros((10, 2), np.float32)
    act[2, 0] = np.nan
    with pytest.raises(ValueError, match="actions contain NaN"):
        fit_weighted_mle(obs, act, device="cpu")
    with pytest.raises(ValueError, match="one weight per step"):
        fit_weighted_mle(obs, np.zeros((10, 2)), np.ones(3), device="cpu")
    with pytest.raises(ValueError, match="non-negative"):
        fit_weighted_mle(obs, np.zeros((10, 2)), -np.ones(10), device="cpu")
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        PAWSConfig(neff_fraction=0.0)
    with pytest.raises(TypeError, match="SegmentPairs"):
        fit_paws([1, 2, 3])


def test_weighted_mle_follows_the_weights():
    """Two action modes; the weights pick one: the fitted mean lands on it."""
    rng = np.random.default_rng(0)
    obs = rng.normal(size=(400, 3)).astype(np.float32)
    act = np.where(np.arange(400)[:, None] % 2 == 0, 0.8, -0.8) * np.ones((400, 2))
    w = (np.arange(400) % 2 == 0).astype(float) + 1e-6
    fit = fit_weighted_mle(obs, act, w, PolicyConfig(cap=400), seed=0, device="cpu")
    assert np.all(np.abs(fit.policy.act(obs[:20]) - 0.8) < 0.1)


def test_a_failing_evaluation_episode_is_data(env):
    starts = env.starts(4, np.random.default_rng(0))

    def flaky(obs):
        if np.any(obs[:, 0] > 1.2):  # raises for the episodes that start on the far right
            raise RuntimeError("controller fault")
        return np.zeros((obs.shape[0], 2))

    ev = evaluate_policy(flaky, env, starts)
    bad = starts[:, 0] > 1.2
    assert bad.any() and not bad.all()
    assert ev.failed == int(bad.sum()) and len(ev.errors) == ev.failed
    assert "controller fault" in ev.errors[0]
    assert np.all(np.isfinite(ev.returns[~bad]))
    nan_policy = evaluate_policy(lambda o: np.full((o.shape[0], 2), np.nan), env, starts)
    assert nan_policy.failed == 4 and "non-finite" in nan_policy.errors[0]


def test_policy_checkpoint_roundtrip(tmp_path):
    from icml26.paws import load_policy, save_policy

    obs = np.zeros((20, 3), np.float32)
    fit = fit_weighted_mle(obs, np.zeros((20, 2)), None, PolicyConfig(cap=5), device="cpu")
    save_policy(fit.policy, tmp_path / "ck")
    back = load_policy(tmp_path / "ck")
    np.testing.assert_array_equal(_params(back), _params(fit.policy))


def test_gaussian_policy_is_iqls_actor_and_roundtrips(tmp_path):
    from icml26.paws import load_policy, save_policy
    from icml26.paws.policy import GaussianPolicy

    rng = np.random.default_rng(0)
    obs = rng.normal(size=(40, 3)).astype(np.float32)
    act = np.clip(rng.normal(size=(40, 2)), -1, 1).astype(np.float32)
    act[:5] = 1.0  # saturated actions: finite likelihood, no Jacobian term
    fit = fit_weighted_mle(obs, act, None, PolicyConfig(cap=5, distribution="gaussian"),
                           device="cpu")  # fmt: skip
    pol = fit.policy
    assert isinstance(pol, GaussianPolicy)
    mu, log_std = pol(torch.as_tensor(obs))
    assert torch.all(log_std >= -5.0) and torch.all(log_std <= 2.0)
    assert torch.allclose(log_std, log_std[:1].expand_as(log_std))  # state-independent σ
    lp = pol.log_prob(torch.as_tensor(obs), torch.as_tensor(act))
    want = torch.distributions.Normal(torch.tanh(mu), log_std.exp()).log_prob(
        torch.as_tensor(act)).sum(-1)  # fmt: skip
    torch.testing.assert_close(lp, want)
    save_policy(pol, tmp_path / "g")
    back = load_policy(tmp_path / "g")
    assert isinstance(back, GaussianPolicy)
    np.testing.assert_array_equal(_params(back), _params(pol))
    np.testing.assert_array_equal(back.act(obs), pol.act(obs))
    with pytest.raises(ValueError, match="distribution"):
        PolicyConfig(distribution="beta")
