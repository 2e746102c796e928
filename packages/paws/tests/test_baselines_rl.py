"""IQL, Preference Transformer + IQL and IPL: invariants, bad input, teacher leakage."""

import numpy as np
import pytest
import torch

from icml26.paws import (
    Episodes,
    IPLConfig,
    IQLConfig,
    PolicyConfig,
    PreferenceTransformer,
    fit_iql,
    ipl,
    pt_iql,
    relabel_episodes,
    transitions,
)
from icml26.paws.iql import (
    D3RLPY_IQL_STRUCTURE,
    actor_config,
    expectile_loss,
    iql_policy,
    iql_transitions,
)
from icml26.paws.networks import ObsNorm
from icml26.paws.policy import GaussianPolicy, fit_weighted_mle

POLICY = PolicyConfig(cap=30, plateau_window=10)
IQL = IQLConfig(cap=40, plateau_window=10)


def _params(module):
    return torch.cat([p.detach().flatten() for p in module.parameters()]).numpy()


def test_expectile_loss_weights_the_sides_asymmetrically():
    u = torch.tensor([1.0, -1.0])
    assert float(expectile_loss(u[:1], 0.7)) == pytest.approx(0.7)
    assert float(expectile_loss(u[1:], 0.7)) == pytest.approx(0.3)
    with pytest.raises(ValueError, match="expectile"):
        IQLConfig(expectile=1.0)


def test_transitions_mark_the_last_step_terminal(episodes):
    reward = np.ones(episodes.obs.shape[:2])
    t = transitions(episodes, reward)
    h = episodes.horizon
    assert t.terminal.reshape(-1, h)[:, -1].all() and not t.terminal.reshape(-1, h)[:, :-1].any()
    np.testing.assert_array_equal(t.next_obs.reshape(-1, h, 3)[:, 0], episodes.obs[:, 1])
    with pytest.raises(ValueError, match="one reward per step"):
        transitions(episodes, reward[:, :-1])
    reward[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        transitions(episodes, reward)


def test_transitions_can_drop_the_time_limit_step(episodes):
    # d3rlpy's timeout handling: the last step has no next observation, so no transition
    reward = np.arange(episodes.obs.size // 3, dtype=float).reshape(episodes.obs.shape[:2])
    t = transitions(episodes, reward, last_step="drop")
    e, h = episodes.obs.shape[:2]
    assert t.obs.shape == (e * (h - 1), 3) and not t.terminal.any()
    np.testing.assert_array_equal(t.next_obs.reshape(e, h - 1, 3), episodes.obs[:, 1:])
    np.testing.assert_array_equal(t.reward.reshape(e, h - 1), reward[:, :-1])
    dropped = iql_transitions(episodes, reward, IQLConfig(last_step="drop"))
    assert dropped.obs.shape[0] == e * (h - 1)
    with pytest.raises(ValueError, match="last_step"):
        transitions(episodes, reward, last_step="bootstrap")
    with pytest.raises(ValueError, match="last_step"):
        IQLConfig(last_step="bootstrap")


def test_iql_actor_knobs(episodes):
    with pytest.raises(ValueError, match="actor"):
        IQLConfig(actor="beta")
    with pytest.raises(ValueError, match="actor_lr"):
        IQLConfig(actor_lr=0.0)
    pc = PolicyConfig(cap=30, lr=1e-3)
    assert actor_config(IQLConfig(), pc) is pc  # 0.6.0's extraction: the policy config
    a = actor_config(IQLConfig(actor="gaussian", actor_lr=3e-4), pc)
    assert a.distribution == "gaussian" and a.lr == 3e-4 and a.cap == 30
    fit, _ = iql_policy(episodes, np.ones(episodes.obs.shape[:2]),
                        IQLConfig(cap=20, plateau_window=10, last_step="drop", actor="gaussian",
                                  actor_lr=3e-4), POLICY, device="cpu")  # fmt: skip
    assert isinstance(fit.policy, GaussianPolicy)
    assert np.all(np.abs(fit.policy.act(episodes.obs[0])) <= 1.0)


def test_iql_structure_options(episodes, pairs):
    # 0.9.0: d3rlpy's update structure as options, off by default
    for bad in ({"critic_update": "x"}, {"actor_update": "x"}, {"actor_sampling": "x"},
                {"obs_eps": -1.0}, {"obs_eps": float("nan")}):  # fmt: skip
        with pytest.raises(ValueError):
            IQLConfig(**bad)
    with pytest.raises(ValueError, match="sampling"):
        PolicyConfig(sampling="x")
    pc = PolicyConfig(cap=30)
    a = actor_config(IQLConfig(actor_sampling="uniform", obs_eps=1e-3), pc)
    assert a.sampling == "uniform" and a.obs_eps == 1e-3
    base = {"cap": 20, "plateau_window": 10, "last_step": "drop", "actor": "gaussian",
            "normalize_obs": True}  # fmt: skip
    reward = np.random.default_rng(0).normal(size=episodes.obs.shape[:2])
    ref, _ = iql_policy(episodes, reward, IQLConfig(**base), POLICY, device="cpu")
    for opts in D3RLPY_IQL_STRUCTURE.items():
        fit, info = iql_policy(episodes, reward, IQLConfig(**base, **dict([opts])), POLICY,
                               device="cpu")  # fmt: skip
        assert np.all(np.isfinite(fit.policy.act(episodes.obs[0])))
        assert not np.array_equal(_params(fit.policy), _params(ref.policy)), opts
    # the joint actor takes one step per critic step, however the actor's own cap is set
    fit, info = iql_policy(episodes, reward, IQLConfig(**base, actor_update="joint"),
                           PolicyConfig(cap=5), device="cpu")  # fmt: skip
    assert fit.plateau["steps"] == info["critic_plateau"]["steps"] == 20
    assert len(fit.losses) == 20 and isinstance(fit.policy, GaussianPolicy)
    q = IQLConfig(**base, **D3RLPY_IQL_STRUCTURE)
    fit, info = ipl(pairs, episodes, IPLConfig(iql=q, cap=20, plateau_window=10), POLICY,
                    device="cpu")  # fmt: skip
    assert fit.plateau["steps"] == info["critic_plateau"]["steps"] == 20


def test_joint_critic_step_is_one_step_on_both_losses(episodes):
    # one step of each from the same initial critic on the same minibatch
    reward = np.ones(episodes.obs.shape[:2])
    data = transitions(episodes, reward, last_step="drop")
    one = IQLConfig(cap=1, plateau_window=1, critic_update="joint")
    sep = IQLConfig(cap=1, plateau_window=1)
    cj, _ = fit_iql(data, one, device="cpu")
    cs, _ = fit_iql(data, sep, device="cpu")
    # V's step is the same (the same expectile loss on the same minibatch, Adam per
    # parameter); Q's differs only through the TD target's V (before vs after V's step)
    np.testing.assert_allclose(_params(cj.v), _params(cs.v), rtol=0, atol=1e-6)
    assert not np.array_equal(_params(cj.q), _params(cs.q))


def test_uniform_sampling_weights_the_loss(episodes):
    obs, act = episodes.steps()
    w = np.zeros(obs.shape[0])
    w[:5] = 1.0
    fit = fit_weighted_mle(obs, act, w, PolicyConfig(cap=3, sampling="uniform"), device="cpu")
    fit_w = fit_weighted_mle(obs, act, w, PolicyConfig(cap=3), device="cpu")
    assert fit.first_batch != fit_w.first_batch and max(fit_w.first_batch) < 5
    assert np.all(np.isfinite(fit.losses))
    # uniform minibatches do not depend on the weights, so zero weight on every index of
    # the first batch makes that batch's loss exactly zero: the weight is in the loss
    uniform = PolicyConfig(cap=3, sampling="uniform")
    w = np.ones(obs.shape[0])
    ones = fit_weighted_mle(obs, act, w, uniform, device="cpu")
    w[ones.first_batch] = 0.0
    zero = fit_weighted_mle(obs, act, w, uniform, device="cpu")
    assert zero.first_batch == ones.first_batch == fit.first_batch
    assert zero.losses[0] == 0.0 and ones.losses[0] != 0.0


def test_obs_norm_eps_divides_by_std_plus_eps():
    x = np.random.default_rng(0).normal(size=(100, 3))
    x[:, 1] = 1e-6 * x[:, 1]  # numerical jitter
    x[:, 2] = 5.0  # constant
    plain = ObsNorm(3).fit(x)
    eps = ObsNorm(3).fit(x, 1e-3)
    np.testing.assert_allclose(eps.std.numpy(), x.std(axis=0) + 1e-3)
    assert float(plain.std[2]) == 1.0 and float(plain.std[1]) < 1e-5  # the floor misses jitter
    z = eps(torch.as_tensor(x, dtype=torch.float32)).numpy()
    assert np.abs(z[:, 1]).max() < 1e-2 and np.all(z[:, 2] == 0)
    with pytest.raises(ValueError, match="eps"):
        ObsNorm(3).fit(x, -1.0)


def test_ipl_with_dropped_time_limit_steps_runs(pairs, episodes):
    q = IQLConfig(cap=20, plateau_window=10, last_step="drop", actor="gaussian", actor_lr=3e-4)
    fit, info = ipl(pairs, episodes, IPLConfig(iql=q, cap=20, plateau_window=10), POLICY,
                    device="cpu")  # fmt: skip
    assert isinstance(fit.policy, GaussianPolicy) and info["critic_plateau"]["steps"] <= 20


def test_iql_critic_learns_a_constant_reward(episodes):
    # r = 1 everywhere, the last step terminal: V(s_0) → Σ_{k<H} γ^k > 0, Q − V finite
    reward = np.ones(episodes.obs.shape[:2])
    critic, summary = fit_iql(transitions(episodes, reward), IQLConfig(cap=300), device="cpu")
    assert summary["steps"] <= 300
    v = critic.value(torch.as_tensor(episodes.obs[:, 0])).detach().numpy()
    assert np.all(np.isfinite(v)) and v.mean() > 0.5


def test_preference_transformer_is_causal_and_weights_sum_to_one(pairs):
    torch.manual_seed(0)
    model = PreferenceTransformer(3, 2, 20).eval()
    obs = torch.as_tensor(pairs.obs[:4, 0])
    act = torch.as_tensor(pairs.act[:4, 0])
    r, w = model.rewards_and_weights(obs, act)
    torch.testing.assert_close(w.sum(-1), torch.ones(4))
    changed = obs.clone()
    changed[:, 15:] += 1.0  # the future must not change earlier non-Markovian rewards
    r2, _ = model.rewards_and_weights(changed, act)
    torch.testing.assert_close(r[:, :15], r2[:, :15])
    assert not torch.allclose(r[:, 15:], r2[:, 15:])


def test_relabel_covers_every_step(episodes):
    model = PreferenceTransformer(3, 2, 20, alignment=20)
    out = relabel_episodes(model, episodes)
    assert out.shape == episodes.obs.shape[:2] and np.all(np.isfinite(out))
    with pytest.raises(ValueError, match="longer than the episode"):
        relabel_episodes(PreferenceTransformer(3, 2, 500), episodes)


def test_ipl_config_rejects_bad_values():
    with pytest.raises(ValueError, match="reward_reg"):
        IPLConfig(reward_reg=-1.0)


def test_rl_baselines_never_see_rewards(pairs, episodes):
    noise = np.random.default_rng(9).normal(size=episodes.reward.shape) * 1e6
    poisoned = Episodes(obs=episodes.obs, act=episodes.act, kind=episodes.kind, reward=noise)
    from icml26.paws import AdvantageConfig

    adv_cfg = AdvantageConfig(cap=30, plateau_window=5)
    runs = {
        "PT+IQL": lambda ep: pt_iql(pairs, ep, IQL, POLICY, advantage_config=adv_cfg, seed=0,
                                    device="cpu")[0].policy,
        "IPL": lambda ep: ipl(pairs, ep, IPLConfig(iql=IQL, cap=40, plateau_window=10), POLICY,
                              seed=0, device="cpu")[0].policy,
    }  # fmt: skip
    for name, fn in runs.items():
        np.testing.assert_array_equal(_params(fn(episodes)), _params(fn(poisoned)), err_msg=name)


def test_a_smaller_critic_cap_is_a_prefix_of_a_larger_one(pairs, episodes):
    # the IQL budget study scores every cap from one run: the critic at step c of a
    # longer run (with policies extracted in between) must equal a run capped at c
    from icml26.paws import fit_weighted_mle
    from icml26.paws.iql import advantage_weights

    data = transitions(episodes, np.random.default_rng(3).normal(size=episodes.obs.shape[:2]))
    obs, act = episodes.steps()
    short, long = IQLConfig(cap=20, plateau_window=10), IQLConfig(cap=40, plateau_window=10)

    def snapshot(at, store, o, a, cfg):
        def on_step(step, critic):
            if step == at:
                store.append(_params(critic))
                fit_weighted_mle(o, a, advantage_weights(critic, o, a, cfg), POLICY, device="cpu")

        return on_step

    seen: list = []
    fit_iql(data, long, device="cpu", on_step=snapshot(20, seen, data.obs, data.act, long))
    critic, summary = fit_iql(data, short, device="cpu")
    assert summary["steps"] == 20 and len(seen) == 1
    np.testing.assert_array_equal(seen[0], _params(critic))
    seen = []
    ipl(pairs, episodes, IPLConfig(iql=long, cap=40, plateau_window=10), POLICY, device="cpu",
        on_step=snapshot(20, seen, obs, act, long))  # fmt: skip
    last: dict = {}
    _, info = ipl(pairs, episodes, IPLConfig(iql=short, cap=20, plateau_window=10), POLICY,
                  device="cpu", on_step=lambda s, c: last.update(params=_params(c)))  # fmt: skip
    assert info["critic_plateau"]["steps"] == 20 and len(seen) == 1
    np.testing.assert_array_equal(seen[0], last["params"])


def test_iql_trace_records_the_plateau_rules_loss_per_step(episodes):
    # the trace is a read-out: the same critic with and without it, one tuple per step,
    # its first entry the normalised TD loss (TD loss / target variance) the rule watches
    data = transitions(episodes, np.random.default_rng(4).normal(size=episodes.obs.shape[:2]))
    cfg = IQLConfig(cap=30, plateau_window=10)
    trace: list = []
    critic, summary = fit_iql(data, cfg, device="cpu", trace=trace)
    plain, _ = fit_iql(data, cfg, device="cpu")
    np.testing.assert_array_equal(_params(critic), _params(plain))
    assert len(trace) == summary["steps"] == 30
    t = np.array(trace)
    np.testing.assert_allclose(t[:, 0], t[:, 1] / (t[:, 2] + 1e-8), rtol=1e-12)
    windows = t[:, 0].reshape(3, 10).mean(1)  # the rule's windows of the traced values
    assert np.isclose(windows, summary["best_window_loss"], rtol=1e-9).any()
