"""Routers, handoff, per-agent tokenizers and rollouts."""

import pytest
import torch

from icml26.teamtr import RandomRouter, RoundRobinRouter, Team, rollout
from icml26.teamtr.team import SEP


def test_router_naming_an_unknown_agent_is_rejected(team3, game3):
    p, a = game3.sample(2, torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="unknown agent 'ghost'"):
        rollout(team3, game3, p, a, group_size=2, router=RoundRobinRouter(["a0", "ghost"]),
                generator=torch.Generator())  # fmt: skip
    with pytest.raises(ValueError, match="per"):
        RandomRouter(["a0"], per="turn")
    with pytest.raises(ValueError, match="at least one"):
        RoundRobinRouter([])


def test_team_validation(tiny_team):
    p = tiny_team(1).policies[0]
    with pytest.raises(ValueError, match="one policy per name"):
        Team(["a", "b"], [p])
    with pytest.raises(ValueError, match="unique"):
        Team(["a", "a"], [p, p])
    with pytest.raises(TypeError, match=r"nn\.Module"):
        Team(["a"], [lambda x: x])


def test_rollout_layout_groups_and_counter(team3, game3, router3):
    gen = torch.Generator().manual_seed(0)
    p, a = game3.sample(5, gen)
    batch = rollout(team3, game3, p, a, group_size=4, router=router3, generator=gen)
    assert batch.tokens.shape == (20, 1 + 2 + 3 * 2)
    assert batch.group.tolist() == [i // 4 for i in range(20)]
    assert (batch.tokens[:, [3, 5, 7]] == SEP).all()
    assert batch.owner[0].tolist() == [-1, -1, -1, -1, 0, -1, 1, -1, 2]
    assert team3.rollouts_used == 20
    rollout(team3, game3, p, a, group_size=4, router=router3, generator=gen, count=False)
    assert team3.rollouts_used == 20
    assert set(batch.rewards.tolist()) <= {0.0, 1.0}
    with pytest.raises(ValueError, match="answers"):
        rollout(team3, game3, p, a[:2], group_size=2, router=router3, generator=gen)


def test_same_seed_same_rollouts(team3, game3, router3):
    p, a = game3.sample(4, torch.Generator().manual_seed(0))
    b1 = rollout(team3, game3, p, a, group_size=4, router=router3,
                 generator=torch.Generator().manual_seed(3))  # fmt: skip
    b2 = rollout(team3, game3, p, a, group_size=4, router=router3,
                 generator=torch.Generator().manual_seed(3))  # fmt: skip
    assert torch.equal(b1.tokens, b2.tokens)


def test_per_agent_tokenizer_is_a_retokenisation(team3, game3, router3):
    perm = torch.randperm(20, generator=torch.Generator().manual_seed(1))
    mapped = Team(team3.names, team3.policies, [perm, None, None])
    x = torch.arange(20)[None]
    assert torch.equal(mapped.unview(0, mapped.view(0, x)), x)
    assert torch.equal(mapped.view(0, x), perm[None])
    p, a = game3.sample(4, torch.Generator().manual_seed(0))
    batch = rollout(mapped, game3, p, a, group_size=2, router=router3,
                    generator=torch.Generator().manual_seed(0))  # fmt: skip
    assert batch.tokens.max() < 20 and (batch.tokens[:, 3] == SEP).all()
