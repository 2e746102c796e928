"""Stage-0 alignment of a replaced agent (component swap), reconstructed.

The paper runs a trust-region alignment stage of a newcomer against the team before the
normal stages, to avoid the "swap shock" of a direct replacement. Its exact objective is
not public; reconstructed here: on fresh rollouts of the team with the incumbent still in
place, the newcomer minimises the token-decomposed KL(π_incumbent ‖ π_newcomer) on the
incumbent's own positions (so the contexts the rest of the team sees barely move), until
``icml26.shared.Plateau`` stops on that training loss; then it takes the incumbent's seat.
"""

from __future__ import annotations

import torch
from torch import nn

from icml26.shared import Plateau
from icml26.teamtr.team import Team, rollout
from icml26.teamtr.teamtr import agent_logprobs

__all__ = ["stage0_alignment"]


def stage0_alignment(
    team: Team,
    agent: int,
    newcomer: nn.Module,
    task,
    *,
    router,
    rule: Plateau,
    generator: torch.Generator,
    prompts: int = 32,
    group_size: int = 8,
    lr: float = 3e-3,
) -> tuple[Team, dict]:
    """A copy of ``team`` with ``newcomer`` aligned into seat ``agent``.

    Returns the new team and ``{"losses", "summary", "rollouts"}``; the rollouts spent are
    counted on ``team.rollouts_used`` (alignment is part of the budget).
    """
    if not isinstance(rule, Plateau):
        raise TypeError(f"rule must be an icml26.shared.Plateau, got {type(rule).__name__}")
    if not 0 <= agent < len(team):
        raise ValueError(f"agent index {agent} outside the team of {len(team)}")
    if not isinstance(newcomer, nn.Module):
        raise TypeError(f"newcomer must be a torch.nn.Module, got {type(newcomer).__name__}")
    policies = list(team.policies)
    policies[agent] = newcomer
    aligned = Team(list(team.names), policies, list(team.token_maps))
    opt = torch.optim.Adam(newcomer.parameters(), lr=lr)
    losses, start = [], team.rollouts_used
    while not rule.stopped:
        p, a = task.sample(prompts, generator)
        batch = rollout(team, task, p, a, group_size=group_size, router=router,
                        generator=generator)  # fmt: skip
        with torch.no_grad():
            old_full, _, mask = agent_logprobs(team, (agent,), batch)
        new_full, _, _ = agent_logprobs(aligned, (agent,), batch)
        per_tok = (old_full.exp() * (old_full - new_full)).sum(-1)
        loss = (per_tok * mask).sum() / mask.sum().clamp_min(1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
        rule.update(losses[-1])
    return aligned, {"losses": losses, "summary": rule.summary(),
                     "rollouts": team.rollouts_used - start}  # fmt: skip
