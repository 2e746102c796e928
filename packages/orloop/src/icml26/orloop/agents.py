"""The agent interface and the episode loop shared by every repair agent.

An agent maps a :class:`~icml26.orloop.env.DebugState` to an
:class:`~icml26.orloop.env.Action` (or to the JSON text an LLM would emit).
:func:`run_episode` plays one instance; :func:`evaluate` plays a list of them and
returns :class:`~icml26.orloop.metrics.EpisodeResult` records.

The agents: :mod:`~icml26.orloop.baselines` (Random, DoNothing, Heuristic,
GreedyDrop, Regenerate, MinimalRepair), :mod:`~icml26.orloop.policy` (the
GRPO-trained policy) and :mod:`~icml26.orloop.llm_client` (any OpenAI-compatible
chat endpoint).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol, runtime_checkable

from icml26.orloop.env import Action, DebugState, RepairEnv
from icml26.orloop.metrics import EpisodeResult
from icml26.orloop.rewards import RewardConfig
from icml26.orloop.saboteur import Instance
from icml26.shared import progress


@runtime_checkable
class Agent(Protocol):
    """What the episode loop needs from an agent."""

    name: str

    def reset(self) -> None:
        """Forget the previous episode."""

    def act(self, state: DebugState) -> Action | Mapping[str, Any] | str:
        """The next action."""


def run_episode(
    agent: Agent,
    instance: Instance,
    *,
    max_steps: int = 10,
    reward: RewardConfig | None = None,
    reveal_iis: bool = True,
) -> EpisodeResult:
    """Play ``agent`` on ``instance`` until OPTIMAL, SUBMIT or ``max_steps``.

    ``reveal_iis=False`` hides the IIS until the agent asks for it (``GET_IIS``).
    """
    if not isinstance(agent, Agent):
        raise TypeError(f"{type(agent).__name__} does not implement the Agent protocol")
    env = RepairEnv(instance, max_steps=max_steps, reward=reward, reveal_iis=reveal_iis)
    state, _ = env.reset()
    agent.reset()
    done = env.done
    while not done:
        state, _, terminated, truncated, _ = env.step(agent.act(state))
        done = terminated or truncated
    return env.result(agent.name)


def evaluate(
    agent: Agent,
    instances: Iterable[Instance],
    *,
    max_steps: int = 10,
    reward: RewardConfig | None = None,
    show_progress: bool = False,
    reveal_iis: bool = True,
) -> list[EpisodeResult]:
    """One episode per instance."""
    items = list(instances)
    # the shared bar hides itself off-terminal and under ICML26_QUIET; off unless asked for
    it = progress(items, desc=agent.name) if show_progress else items
    return [
        run_episode(agent, inst, max_steps=max_steps, reward=reward, reveal_iis=reveal_iis)
        for inst in it
    ]
