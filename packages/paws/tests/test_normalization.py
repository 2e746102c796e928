"""Observation normalisation inside every learner, and the exact optimiser."""

import dataclasses

import numpy as np
import pytest
import torch

from icml26.paws import (
    AdvantageConfig,
    IQLConfig,
    PolicyConfig,
    behaviour_cloning,
    evaluate_policy,
    fit_advantage,
    load_policy,
    piql_lite,
    pt_iql,
    save_policy,
    transitions,
)
from icml26.paws.baselines import IPLConfig, ipl
from icml26.paws.iql import fit_iql
from icml26.paws.networks import Adam, ObsNorm, mlp

FAST = PolicyConfig(cap=30, normalize_obs=True)


def _reference_stats(obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = obs.reshape(-1, obs.shape[-1]).astype(np.float64)
    sd = x.std(axis=0)
    return x.mean(axis=0), np.where(sd < 1e-6, 1.0, sd)


@pytest.mark.parametrize("weight_decay", [0.0, 1e-4])
def test_adam_is_bit_identical_to_torch(weight_decay):
    def train(make):
        torch.manual_seed(0)
        net = mlp(5, 3, (16, 16))
        opt = make(net.parameters())
        g = torch.Generator().manual_seed(1)
        x, y = torch.randn(64, 5, generator=g), torch.randn(64, 3, generator=g)
        for _ in range(40):
            i = torch.randint(0, 64, (16,), generator=g)
            loss = (net(x[i]) - y[i]).square().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        return [p.detach() for p in net.parameters()]

    if weight_decay:
        ref = train(lambda p: torch.optim.AdamW(p, lr=1e-3, weight_decay=weight_decay))
    else:
        ref = train(lambda p: torch.optim.Adam(p, lr=1e-3))
    ours = train(lambda p: Adam(p, lr=1e-3, weight_decay=weight_decay))
    assert all(torch.equal(a, b) for a, b in zip(ref, ours, strict=True))


def test_obs_norm_is_the_identity_until_fitted_and_refuses_bad_data():
    norm = ObsNorm(3)
    x = torch.randn(4, 3)
    assert norm(x) is x and not norm.active
    obs = np.stack([np.arange(6.0), np.full(6, 2.0), -3 * np.arange(6.0)], axis=1)
    norm.fit(obs)
    mean, sd = _reference_stats(obs)
    assert np.allclose(norm.mean.numpy(), mean) and np.allclose(norm.std.numpy(), sd)
    assert norm.std[1] == 1.0  # a constant dimension is centred, not divided by zero
    z = norm(torch.as_tensor(obs, dtype=torch.float32)).numpy()
    assert np.allclose(z.mean(axis=0), 0.0, atol=1e-6)
    assert np.allclose(z.std(axis=0), [1.0, 0.0, 1.0], atol=1e-5)
    with pytest.raises(ValueError, match="dims"):
        ObsNorm(2).fit(obs)
    with pytest.raises(ValueError, match="finite"):
        ObsNorm(3).fit(np.full((2, 3), np.nan))


def test_bc_fits_statistics_on_training_data_and_applies_them_at_evaluation(
    episodes, env, tmp_path
):
    fit = behaviour_cloning(episodes, FAST, seed=0)
    pol = fit.policy
    mean, sd = _reference_stats(episodes.obs)
    assert pol.obs_norm.active
    assert np.allclose(pol.obs_norm.mean.numpy(), mean, atol=1e-6)
    assert np.allclose(pol.obs_norm.std.numpy(), sd, atol=1e-6)
    # applied: the policy's output is its MLP on the z-scored observation
    o = episodes.obs[:3, 0]
    z = torch.as_tensor((o - mean) / sd, dtype=torch.float32)
    with torch.no_grad():
        expect = torch.tanh(pol.net(z).chunk(2, dim=-1)[0]).numpy()
    assert np.allclose(pol.act(o), expect, atol=1e-5)
    # evaluation rollouts use the stored statistics and never refit them
    before = (pol.obs_norm.mean.clone(), pol.obs_norm.std.clone())
    starts = env.starts(4, np.random.default_rng(5))
    evaluate_policy(pol.act, env, starts)
    assert torch.equal(pol.obs_norm.mean, before[0]) and torch.equal(pol.obs_norm.std, before[1])
    # saved with the policy
    save_policy(pol, tmp_path / "p")
    back = load_policy(tmp_path / "p")
    assert back.obs_norm.active and torch.equal(back.obs_norm.mean, pol.obs_norm.mean)
    assert np.array_equal(back.act(o), pol.act(o))


def test_normalisation_off_leaves_the_network_input_untouched(episodes):
    pol = behaviour_cloning(episodes, dataclasses.replace(FAST, normalize_obs=False)).policy
    assert not pol.obs_norm.active
    o = torch.as_tensor(episodes.obs[:3, 0])
    with torch.no_grad():
        assert torch.equal(pol(o)[0], pol.net(o).chunk(2, dim=-1)[0])


def test_advantage_model_uses_the_training_split_only(pairs):
    cfg = AdvantageConfig(cap=20, val_patience=2, normalize_obs=True)
    fit = fit_advantage(pairs, cfg, seed=0)
    norm = fit.model.obs_norm
    n = len(pairs)
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(0)).numpy()
    tr = perm[round(cfg.val_fraction * n) :]
    mean, _ = _reference_stats(pairs.obs[tr])
    all_mean, _ = _reference_stats(pairs.obs)
    assert norm.active and np.allclose(norm.mean.numpy(), mean, atol=1e-6)
    assert not np.allclose(mean, all_mean, atol=1e-6)  # the held-out pairs were left out
    with pytest.raises(ValueError, match="obs_norm"):
        fit_advantage(pairs, cfg, model=torch.nn.Linear(1, 1))


def test_critics_and_reward_models_normalise_when_asked(pairs, episodes):
    reward = np.zeros(episodes.obs.shape[:2])
    critic, _ = fit_iql(transitions(episodes, reward), IQLConfig(cap=20, normalize_obs=True))
    mean, _ = _reference_stats(episodes.obs)
    assert critic.obs_norm.active and np.allclose(critic.obs_norm.mean.numpy(), mean, atol=1e-6)
    small = IQLConfig(cap=20, normalize_obs=True)
    adv = AdvantageConfig(cap=20, val_patience=2, normalize_obs=True)
    _, info = pt_iql(pairs, episodes, small, FAST, advantage_config=adv, seed=0)
    assert np.isfinite(info["pt_val_accuracy"])
    fit, _ = ipl(pairs, episodes, IPLConfig(iql=small, cap=20), FAST, seed=0)
    assert fit.policy.obs_norm.active
    fit, _ = piql_lite(pairs, episodes, policy_config=FAST, advantage_config=adv, seed=0)
    assert np.allclose(fit.policy.obs_norm.mean.numpy(), mean, atol=1e-6)


def test_loading_statistics_switches_the_normaliser_on(episodes):
    pol = behaviour_cloning(episodes, FAST, seed=0).policy
    fresh = type(pol)(pol.obs_dim, pol.act_dim)
    assert not fresh.obs_norm.active
    fresh.load_state_dict(pol.state_dict())
    o = episodes.obs[:5, 3]
    assert fresh.obs_norm.active and np.array_equal(fresh.act(o), pol.act(o))
