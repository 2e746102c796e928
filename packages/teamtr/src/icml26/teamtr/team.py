"""A heterogeneous team on a shared text context: routers, handoff and rollouts.

Mirrors the official ``verl/teamtr/router.py`` (round-robin and random routers) and
``context_rollout.py`` (the context grows message by message; each agent reads the
shared context through its own tokenizer). For tiny models the "tokenizer" of an agent
is a permutation of the shared vocabulary (``token_map``): the shared token ids are
re-tokenised into the agent's ids before it reads, and its samples are mapped back.

Layout of one rollout (token positions): ``BOS, prompt..., SEP, message_0..., SEP,
message_1..., ...``. ``owner[t]`` is the agent that wrote token ``t`` (-1 for the prompt
and separators) and ``turn[t]`` its turn, so an agent that acts twice (random router)
has one mask per turn. Returns are sequence-level (the task's verifier on the final
message).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from torch import nn

__all__ = [
    "BOS",
    "HIDDEN",
    "PAD",
    "SEP",
    "RandomRouter",
    "Rollouts",
    "RoundRobinRouter",
    "Team",
    "rollout",
]

PAD, BOS, SEP, HIDDEN = 0, 1, 2, 3


class RoundRobinRouter:
    """Turn ``k`` goes to ``order[k % len(order)]`` (names of the team's agents)."""

    def __init__(self, order: Sequence[str]):
        if not order:
            raise ValueError("a router needs at least one agent name")
        self.order = list(order)

    @property
    def names(self) -> list[str]:
        return list(self.order)

    def route(self, team: Team, batch: int, turns: int, generator: torch.Generator) -> torch.Tensor:
        idx = [team.index(name) for name in self.order]
        row = torch.tensor([idx[k % len(idx)] for k in range(turns)], dtype=torch.long)
        return row.expand(batch, turns).clone()


class RandomRouter:
    """Each turn goes to an agent drawn uniformly from ``names``; ``per="row"`` draws
    per rollout, ``per="batch"`` one route for the whole batch (the official
    ``random_batch``)."""

    def __init__(self, names: Sequence[str], per: str = "row"):
        if not names:
            raise ValueError("a router needs at least one agent name")
        if per not in ("row", "batch"):
            raise ValueError(f"per must be 'row' or 'batch', got {per!r}")
        self.order, self.per = list(names), per

    @property
    def names(self) -> list[str]:
        return list(self.order)

    def route(self, team: Team, batch: int, turns: int, generator: torch.Generator) -> torch.Tensor:
        idx = torch.tensor([team.index(name) for name in self.order], dtype=torch.long)
        rows = 1 if self.per == "batch" else batch
        pick = torch.randint(0, len(idx), (rows, turns), generator=generator)
        return idx[pick].expand(batch, turns).clone()


@dataclass
class Team:
    """Named agents with their own policies (a shared policy is the same module twice)."""

    names: list[str]
    policies: list[nn.Module]
    token_maps: list[torch.Tensor | None] = field(default_factory=list)
    rollouts_used: int = 0

    def __post_init__(self) -> None:
        if len(self.names) != len(self.policies) or not self.names:
            raise ValueError(
                f"a team needs one policy per name, got {len(self.names)} names and "
                f"{len(self.policies)} policies"
            )
        if len(set(self.names)) != len(self.names):
            raise ValueError(f"agent names must be unique, got {self.names}")
        for p in self.policies:
            if not isinstance(p, nn.Module):
                raise TypeError(f"a policy must be a torch.nn.Module, got {type(p).__name__}")
        if not self.token_maps:
            self.token_maps = [None] * len(self.names)
        if len(self.token_maps) != len(self.names):
            raise ValueError("token_maps needs one entry (or None) per agent")

    def __len__(self) -> int:
        return len(self.names)

    def index(self, name: str) -> int:
        try:
            return self.names.index(name)
        except ValueError:
            raise ValueError(
                f"router names unknown agent {name!r}; team has {self.names}"
            ) from None

    def check_router(self, router) -> None:
        for name in router.names:
            self.index(name)

    def clone(self) -> Team:
        """A deep copy (a shared policy stays shared in the copy); the counter starts at 0."""
        memo: dict = {}
        return Team(
            list(self.names),
            [copy.deepcopy(p, memo) for p in self.policies],
            list(self.token_maps),
        )

    def view(self, agent: int, tokens: torch.Tensor) -> torch.Tensor:
        """Shared ids re-tokenised into agent ``agent``'s ids."""
        m = self.token_maps[agent]
        return tokens if m is None else m.to(tokens.device)[tokens]

    def unview(self, agent: int, tokens: torch.Tensor) -> torch.Tensor:
        m = self.token_maps[agent]
        if m is None:
            return tokens
        inverse = torch.empty_like(m)
        inverse[m] = torch.arange(len(m))
        return inverse.to(tokens.device)[tokens]


@dataclass
class Rollouts:
    """A batch of team rollouts: ``G`` per prompt, grouped by ``group`` (prompt index)."""

    tokens: torch.Tensor  # [B, T] shared ids
    owner: torch.Tensor  # [B, T] agent index, -1 for prompt / separators
    turn: torch.Tensor  # [B, T] turn index, -1 outside messages
    route: torch.Tensor  # [B, K] agent per turn
    group: torch.Tensor  # [B] prompt group
    rewards: torch.Tensor  # [B]
    prompt_len: int
    visible: torch.Tensor  # [K, P] bool: which prompt positions turn k reads
    verifier_errors: int = 0

    @property
    def batch(self) -> int:
        return int(self.tokens.shape[0])

    def view_of_turn(self, k: int) -> torch.Tensor:
        """The shared context as turn ``k`` reads it (hidden prompt positions masked)."""
        out = self.tokens.clone()
        hidden = ~self.visible[k].to(out.device)
        cols = torch.arange(1, 1 + self.prompt_len, device=out.device)[hidden]
        out[:, cols] = HIDDEN
        return out

    def mask(self, agents: int | Sequence[int]) -> torch.Tensor:
        """Positions written by ``agents`` (never the prompt or another agent's tokens)."""
        agents = [agents] if isinstance(agents, int) else list(agents)
        m = torch.zeros_like(self.owner, dtype=torch.bool)
        for a in agents:
            m |= self.owner == a
        return m


@torch.no_grad()
def rollout(
    team: Team,
    task,
    prompts: torch.Tensor,
    answers: Sequence,
    *,
    group_size: int,
    router,
    generator: torch.Generator,
    temperature: float = 1.0,
    greedy: bool = False,
    count: bool = True,
) -> Rollouts:
    """``group_size`` rollouts per prompt of the team as it is now.

    Every call with ``count=True`` adds ``len(prompts) * group_size`` to
    ``team.rollouts_used``: matched budgets are asserted on that counter.
    """
    if group_size < 1:
        raise ValueError(f"group_size must be >= 1, got {group_size}")
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    team.check_router(router)
    device = next(team.policies[0].parameters()).device
    prompts = torch.as_tensor(prompts, dtype=torch.long)
    n_prompts, plen = prompts.shape
    if len(answers) != n_prompts:
        raise ValueError(f"{n_prompts} prompts but {len(answers)} answers")
    b = n_prompts * group_size
    group = torch.arange(n_prompts).repeat_interleave(group_size)
    answers_rep = [answers[int(g)] for g in group]
    turns = task.turns
    route = router.route(team, b, turns, generator)
    visible = task.visible_mask()
    lengths = [task.message_len(k) for k in range(turns)]
    total = 1 + plen + sum(1 + m for m in lengths)
    tokens = torch.full((b, total), PAD, dtype=torch.long)
    owner = torch.full((b, total), -1, dtype=torch.long)
    turn = torch.full((b, total), -1, dtype=torch.long)
    tokens[:, 0] = BOS
    tokens[:, 1 : 1 + plen] = prompts[group]
    pos = 1 + plen
    for k in range(turns):
        tokens[:, pos] = SEP
        pos += 1
        hidden_cols = torch.arange(1, 1 + plen)[~visible[k]]
        for _ in range(lengths[k]):
            ctx = tokens[:, :pos].clone()
            ctx[:, hidden_cols] = HIDDEN
            new = torch.empty(b, dtype=torch.long)
            for a in route[:, k].unique().tolist():
                rows = (route[:, k] == a).nonzero().squeeze(1)
                view = team.view(a, ctx[rows]).to(device)
                logits = team.policies[a](view)[:, -1].float().cpu() / temperature
                if greedy:
                    pick = logits.argmax(-1)
                else:
                    pick = torch.multinomial(logits.softmax(-1), 1, generator=generator)[:, 0]
                new[rows] = team.unview(a, pick)
            tokens[:, pos], owner[:, pos], turn[:, pos] = new, route[:, k], k
            pos += 1
    rewards, errors = task.score(tokens, owner, answers_rep)
    if count:
        team.rollouts_used += b
    return Rollouts(tokens, owner, turn, route, group, rewards, plen, visible, errors)
