"""On CUDA: one agent update and a sampled rollout, tiny and paper-size (GPT-2 config)."""

import pytest
import torch

from icml26.teamtr import (
    PolicySpec,
    ProtocolGame,
    RoundRobinRouter,
    Team,
    UpdateConfig,
    group_advantages,
    make_policy,
    rollout,
    update_agents,
)

pytestmark = pytest.mark.gpu


def _cuda():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    return torch.device("cuda")


def _update(team, task):
    gen = torch.Generator().manual_seed(0)
    p, a = task.sample(16, gen)
    batch = rollout(team, task, p, a, group_size=8, router=RoundRobinRouter(team.names),
                    generator=gen)  # fmt: skip
    adv = group_advantages(batch.rewards + 0.01 * torch.randn(128), batch.group, 2.0)
    opt = torch.optim.Adam(team.policies[1].parameters(), lr=1e-4)
    before = [q.detach().clone() for q in team.policies[1].parameters()]
    log = update_agents(team, (1,), batch, opt, UpdateConfig(trust_region="none"),
                        advantages=adv, generator=gen)  # fmt: skip
    assert log.steps > 0 and torch.isfinite(torch.tensor(log.kl))
    moved = any(
        (q.detach() != b).any() for q, b in zip(team.policies[1].parameters(), before, strict=True)
    )
    assert moved
    return batch


def test_tiny_agent_update_on_cuda():
    dev = _cuda()
    g = torch.Generator().manual_seed(0)
    pols = [make_policy(PolicySpec(d_model=32, layers=2, heads=2), g).to(dev) for _ in range(3)]
    batch = _update(Team(["a", "b", "c"], pols), ProtocolGame(3))
    assert batch.rewards.shape == (128,)


def test_paper_size_agent_update_on_cuda():
    dev = _cuda()
    pytest.importorskip("transformers")
    from icml26.teamtr.policies import HFPolicy

    torch.manual_seed(0)
    pols = [HFPolicy.from_config(vocab=20, d_model=768, layers=12, heads=12).to(dev)
            for _ in range(3)]  # fmt: skip
    _update(Team(["a", "b", "c"], pols), ProtocolGame(3))
