"""The BC warm start stops by a plateau of its training loss and learns the code."""

import pytest
import torch

from icml26.shared import Plateau
from icml26.teamtr import RoundRobinRouter, bc_warm_start, evaluate


def test_bc_learns_the_demonstrated_protocol(game3, tiny_team):
    team = tiny_team(3, d=16)
    ep, ea = game3.all_prompts()
    router = RoundRobinRouter(team.names)
    before = evaluate(team, game3, ep, ea, samples=16, router=router, seed=0)
    demos = game3.demonstrations(512, torch.Generator().manual_seed(0), noise=0.0)
    res = bc_warm_start(team, demos, rule=Plateau(4, 3, 0.01, 160), lr=1e-2, batch_size=128,
                        generator=torch.Generator().manual_seed(0))  # fmt: skip
    after = evaluate(team, game3, ep, ea, samples=16, router=router, seed=0)
    assert res.summary["reason"] in ("plateau", "cap")
    assert res.losses[-1] < 0.5 * res.losses[0]
    assert before < 0.4 and after > 0.8
    with pytest.raises(TypeError, match="Plateau"):
        bc_warm_start(team, demos, rule=100, generator=torch.Generator())
