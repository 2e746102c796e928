"""Behaviour-cloning warm start: each agent imitates its own turns of demonstrations.

The brief's smoke protocol starts RL from a BC warm start trained to a loss plateau
(``icml26.shared.Plateau`` on the training cross-entropy). Without RL it is also the
simplest strong baseline ("BC warm start").
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from icml26.shared import Plateau
from icml26.teamtr.tasks import Demonstrations
from icml26.teamtr.team import Rollouts, Team
from icml26.teamtr.teamtr import agent_logprobs

__all__ = ["BCResult", "bc_warm_start"]


@dataclass
class BCResult:
    losses: list[float]
    summary: dict
    rows_seen: list[int] = field(default_factory=list)  # demonstration rows this rank trained on
    world_size: int = 1


def _as_rollouts(demos: Demonstrations, rows: torch.Tensor) -> Rollouts:
    b = len(rows)
    return Rollouts(
        demos.tokens[rows],
        demos.owner[rows],
        demos.turn[rows],
        torch.zeros(b, 1, dtype=torch.long),
        torch.zeros(b, dtype=torch.long),
        torch.zeros(b),
        demos.prompt_len,
        demos.visible,
    )


def bc_warm_start(
    team: Team,
    demos: Demonstrations,
    *,
    rule: Plateau,
    lr: float = 3e-3,
    batch_size: int = 128,
    generator: torch.Generator,
) -> BCResult:
    """Cross-entropy of every agent on its own tokens until ``rule`` stops (plateau or cap).

    Demonstration turn ``k`` belongs to agent ``owner``; a shared policy (one module for
    every agent) is trained on all turns.
    """
    if not isinstance(rule, Plateau):
        raise TypeError(f"rule must be an icml26.shared.Plateau, got {type(rule).__name__}")
    if batch_size < 1 or lr <= 0:
        raise ValueError(f"need batch_size >= 1 and lr > 0, got {batch_size}, {lr}")
    n = len(team)
    modules: dict[int, tuple[int, ...]] = {}
    for i, p in enumerate(team.policies):
        modules.setdefault(id(p), ())
        modules[id(p)] += (i,)
    units = list(modules.values())
    opts = [torch.optim.Adam(team.policies[u[0]].parameters(), lr=lr) for u in units]
    if int(demos.owner.max()) >= n:
        raise ValueError(f"demonstrations name agent {int(demos.owner.max())}; team has {n}")
    losses: list[float] = []
    b = demos.tokens.shape[0]
    world, rank = _world()
    seen: list[int] = []
    while not rule.stopped:
        # one seeded order on every rank; under a launcher each rank takes its shard
        for rows in torch.randperm(b, generator=generator).split(batch_size):
            rows = rows[rank::world]
            seen.extend(rows.tolist())
            batch = _as_rollouts(demos, rows)
            total = 0.0
            for u, opt in zip(units, opts, strict=True):
                _, lp, mask = agent_logprobs(team, u, batch)
                loss = -(lp * mask).sum() / mask.sum().clamp_min(1)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                if world > 1:  # data parallelism: average gradients (and the loss) over ranks
                    _all_reduce_grads(team.policies[u[0]], world)
                opt.step()
                total += _mean_over_ranks(loss.detach(), world)
            losses.append(total)
            if rule.update(total):
                break
    return BCResult(losses, rule.summary(), seen, world)


def _world() -> tuple[int, int]:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size(), dist.get_rank()
    return 1, 0


def _all_reduce_grads(module: torch.nn.Module, world: int) -> None:
    import torch.distributed as dist

    for p in module.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)
            p.grad /= world


def _mean_over_ranks(value: torch.Tensor, world: int) -> float:
    if world > 1:
        import torch.distributed as dist

        value = value.clone()
        dist.all_reduce(value)
        value /= world
    return float(value)
