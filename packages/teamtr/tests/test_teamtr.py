"""The core: reverse KL, advantages, masks, intermediate-team resampling, trust region,
matched budgets."""

import dataclasses

import pytest
import torch

import icml26.teamtr.teamtr as core
from icml26.teamtr import (
    ProtocolGame,
    RandomRouter,
    RoundRobinRouter,
    TrainConfig,
    UpdateConfig,
    agent_logprobs,
    group_advantages,
    kl_estimate,
    method_config,
    rollout,
    token_reverse_kl,
    train,
    update_agents,
)
from icml26.teamtr.team import HIDDEN


def _batch(team, task, router, seed=0, prompts=8, g=4):
    gen = torch.Generator().manual_seed(seed)
    p, a = task.sample(prompts, gen)
    return rollout(team, task, p, a, group_size=g, router=router, generator=gen)


def test_reverse_kl_is_zero_for_identical_policies(team3, game3, router3, tiny_team):
    batch = _batch(team3, game3, router3)
    clone = team3.clone()
    full_a, _, mask = agent_logprobs(team3, (1,), batch)
    full_b, _, _ = agent_logprobs(clone, (1,), batch)
    kl = token_reverse_kl(full_a, full_b, mask.float())
    assert kl.abs().max() < 1e-6
    other = tiny_team(3, seed=9)
    full_c, _, _ = agent_logprobs(other, (1,), batch)
    assert token_reverse_kl(full_c, full_a, mask.float()).mean() > 1e-3


def test_reverse_kl_matches_monte_carlo():
    g = torch.Generator().manual_seed(0)
    new = torch.log_softmax(torch.randn(1, 3, 6, generator=g), -1)
    old = torch.log_softmax(torch.randn(1, 3, 6, generator=g), -1)
    mask = torch.ones(1, 3)
    exact = token_reverse_kl(new, old, mask).item()  # summed over the 3 tokens
    draws = torch.multinomial(new[0].exp(), 200_000, replacement=True, generator=g)  # [3, S]
    lp_new = new[0].gather(1, draws)
    lp_old = old[0].gather(1, draws)
    for kind in ("k1", "k3"):
        mc = kl_estimate(lp_new, lp_old, kind).mean(1).sum().item()
        assert mc == pytest.approx(exact, rel=0.03), kind
    with pytest.raises(ValueError, match="k1"):
        kl_estimate(lp_new, lp_old, "k2")


def test_advantages_are_group_normalised_and_bounded():
    g = torch.Generator().manual_seed(1)
    rewards = torch.randn(40, generator=g) * 3 + 1
    group = torch.arange(5).repeat_interleave(8)
    adv = group_advantages(rewards, group, a_max=100.0)
    for k in range(5):
        a = adv[group == k]
        assert a.mean().abs() < 1e-5 and a.std() == pytest.approx(1.0, abs=1e-3)
    clipped = group_advantages(rewards, group, a_max=0.5)
    assert clipped.abs().max() <= 0.5 + 1e-7 and (clipped.abs() == 0.5).any()
    same = group_advantages(torch.ones(8), torch.zeros(8, dtype=torch.long), a_max=2.0)
    assert torch.all(same == 0)  # one outcome: no signal, no NaN


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"a_max": 0.0}, "A_max"), ({"a_max": -1.0}, "A_max")],
)
def test_advantage_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        group_advantages(torch.ones(4), torch.zeros(4, dtype=torch.long), **kwargs)


def test_group_of_one_is_rejected():
    with pytest.raises(ValueError, match="G >= 2"):
        group_advantages(torch.ones(3), torch.arange(3), a_max=1.0)
    with pytest.raises(ValueError, match="G"):
        TrainConfig(group_size=1)


@pytest.mark.parametrize("field", ["delta", "a_max"])
@pytest.mark.parametrize("value", [0.0, -0.1])
def test_trust_region_parameters_must_be_positive(field, value):
    with pytest.raises(ValueError, match="must be > 0"):
        UpdateConfig(**{field: value})


def test_masks_exclude_prompt_and_other_agents(team3, game3):
    router = RandomRouter(team3.names)  # an agent may act twice
    batch = _batch(team3, game3, router, prompts=16, g=4)
    for a in range(3):
        m = batch.mask(a)
        assert not m[:, : 1 + batch.prompt_len].any()  # never the prompt
        assert torch.equal(m, batch.owner == a)
    twice = ((batch.route == 0).sum(1) >= 2).nonzero()
    assert len(twice) > 0
    # a later turn reads the prompt hidden: changing the digits moves only turn-0 log-probs
    _, lp, mask = agent_logprobs(team3, (0,), batch)
    changed = dataclasses.replace(batch, tokens=batch.tokens.clone())
    changed.tokens[:, 1 : 1 + batch.prompt_len] = (changed.tokens[:, 1:3] - 4 + 1) % 4 + 4
    _, lp2, _ = agent_logprobs(team3, (0,), changed)
    turn = batch.turn[:, 1:]
    later = mask & (turn > 0)
    first = mask & (turn == 0)
    assert torch.allclose(lp[later], lp2[later], atol=1e-6)
    assert not torch.allclose(lp[first], lp2[first], atol=1e-4)
    assert (batch.view_of_turn(1)[:, 1 : 1 + batch.prompt_len] == HIDDEN).all()


def _fingerprint(team):
    return [sum(float(p.detach().sum()) for p in pol.parameters()) for pol in team.policies]


@pytest.mark.parametrize("method", ["teamtr", "naive_grpo"])
def test_intermediate_rollouts_use_the_updated_agents(monkeypatch, team3, game3, router3, method):
    seen = []

    def spy(team, *args, **kwargs):
        if kwargs.get("count", True):
            seen.append(_fingerprint(team))
        return rollout(team, *args, **kwargs)

    monkeypatch.setattr(core, "rollout", spy)
    draws = torch.Generator().manual_seed(0)

    def random_returns(tokens, owner, answers):  # never one outcome per group: a signal
        return torch.rand(len(answers), generator=draws), 0

    monkeypatch.setattr(game3, "score", random_returns)
    base = TrainConfig(
        budget=3, prompts=4, group_size=4, eval_samples=2,
        update=UpdateConfig(trust_region="none", lr=1e-2, epochs=1, minibatches=1),
    )  # fmt: skip
    cfg = method_config(method, base, 3)
    ep, ea = game3.sample(2, torch.Generator())
    train(team3, game3, cfg, router=router3, seed=0, eval_prompts=ep, eval_answers=ea, eval_seed=1)
    assert len(seen) == 3
    if method == "teamtr":
        # before agent i's update: agents < i changed since the stage began, the rest not
        for i in (1, 2):
            assert all(seen[i][j] != seen[0][j] for j in range(i))
            assert all(seen[i][j] == seen[0][j] for j in range(i, 3))
    else:  # one stale batch per stage: every agent updated between consecutive batches
        assert all(seen[1][j] != seen[0][j] for j in range(3))


def test_trust_region_stops_an_over_large_step(team3, game3, router3):
    batch = _batch(team3, game3, router3, prompts=8, g=8)
    adv = group_advantages(batch.rewards + torch.randn(64) * 0.1, batch.group, 2.0)
    logs = {}
    for tr in ("early_stop", "none"):
        team = team3.clone()
        cfg = UpdateConfig(lr=0.5, epochs=2, minibatches=2, delta=0.02, trust_region=tr)
        opt = torch.optim.Adam(team.policies[0].parameters(), lr=cfg.lr)
        logs[tr] = update_agents(
            team, (0,), batch, opt, cfg, advantages=adv, generator=torch.Generator()
        )
    assert logs["none"].kl > 0.02 and logs["none"].out_of_region
    assert logs["early_stop"].stopped_early and logs["early_stop"].kl <= 0.02
    assert not logs["early_stop"].out_of_region
    assert logs["early_stop"].steps < logs["none"].steps


def test_adaptive_beta_rises_when_out_of_region(team3, game3, router3):
    batch = _batch(team3, game3, router3, prompts=8, g=8)
    adv = group_advantages(batch.rewards + torch.randn(64) * 0.1, batch.group, 2.0)
    cfg = UpdateConfig(lr=0.5, delta=0.02, trust_region="adaptive", kl_coef=0.01)
    opt = torch.optim.Adam(team3.policies[0].parameters(), lr=cfg.lr)
    log = update_agents(team3, (0,), batch, opt, cfg, advantages=adv, generator=torch.Generator())
    assert log.kl > 0.03 and log.beta == pytest.approx(0.02)


def test_matched_budgets_counted_in_rollouts(game3, tiny_team):
    base = TrainConfig(
        budget=6, prompts=4, group_size=2, eval_samples=1,
        update=UpdateConfig(epochs=1, minibatches=1),
    )  # fmt: skip
    ep, ea = game3.all_prompts()
    used = {}
    for name in ("teamtr", "naive_grpo", "naive_dapo", "naive_ppo", "joint", "happo",
                 "no_resampling", "no_trust_region"):  # fmt: skip
        team = tiny_team(3)
        hist = train(
            team, game3, method_config(name, base, 3), router=RoundRobinRouter(team.names),
            seed=0, eval_prompts=ep, eval_answers=ea, eval_seed=1,
        )  # fmt: skip
        used[name] = team.rollouts_used
        assert hist.rollouts[-1] == team.rollouts_used
        assert len(hist.success) == 3  # evaluations at 0, 3 and 6 batches
    assert set(used.values()) == {6 * 4 * 2}
    p = tiny_team(1).policies[0]
    from icml26.teamtr import Team

    shared = Team(["a0", "a1", "a2"], [p, p, p])
    train(shared, game3, method_config("shared", base, 3), router=RoundRobinRouter(shared.names),
          seed=0, eval_prompts=ep, eval_answers=ea, eval_seed=1)  # fmt: skip
    assert shared.rollouts_used == 6 * 4 * 2
    with pytest.raises(ValueError, match="whole number of stages"):
        train(tiny_team(3), game3, dataclasses.replace(base, budget=4), router=router_for(3),
              seed=0, eval_prompts=ep, eval_answers=ea, eval_seed=1)  # fmt: skip


def router_for(n):
    return RoundRobinRouter([f"a{i}" for i in range(n)])


def test_bad_method_names_and_shared_needs_one_policy(game3, tiny_team):
    with pytest.raises(ValueError, match="method"):
        TrainConfig(method="mappo")
    with pytest.raises(ValueError, match="unknown method"):
        method_config("mappo", TrainConfig(), 3)
    ep, ea = game3.all_prompts()
    with pytest.raises(ValueError, match="share one policy"):
        train(tiny_team(3), game3, TrainConfig(method="shared", budget=1), router=router_for(3),
              seed=0, eval_prompts=ep, eval_answers=ea, eval_seed=0)  # fmt: skip


def test_task_is_the_protocol_game_with_hidden_digits():
    task = ProtocolGame(agents=2)
    assert task.visible_mask().tolist() == [[True, True], [False, False]]


def test_stage0_alignment_pulls_the_newcomer_to_the_incumbent(team3, game3, router3, tiny_team):
    from icml26.shared import Plateau
    from icml26.teamtr import stage0_alignment

    newcomer = tiny_team(1, seed=5, d=24).policies[0]
    gen = torch.Generator().manual_seed(0)
    aligned, info = stage0_alignment(team3, 1, newcomer, game3, router=router3, generator=gen,
                                     rule=Plateau(2, 2, 0.01, 30), prompts=8, group_size=4,
                                     lr=1e-2)  # fmt: skip
    assert aligned.policies[1] is newcomer and team3.policies[1] is not newcomer
    assert info["losses"][-1] < 0.5 * info["losses"][0]
    assert info["rollouts"] == info["summary"]["steps"] * 32 == team3.rollouts_used
    with pytest.raises(ValueError, match="outside"):
        stage0_alignment(team3, 3, newcomer, game3, router=router3, generator=gen,
                         rule=Plateau(2, 2, 0.01, 2))  # fmt: skip
