"""Verifiable multi-agent tasks and loaders for the formats users bring.

- :class:`ProtocolGame` (the brief's referential game, reconstructed): the first turn
  sees digits, every later turn sees only the messages; the last message must be
  ``f(digits) = sum(digits) mod base``. Each agent alone is at chance (1/base): the
  team succeeds only through a shared code, which is arbitrary, so a listener is right
  only for the speaker it was trained with.
- :class:`ModularChain`: turn ``k`` sees prompt digit ``k`` only and must emit the running
  sum mod ``base``; the last message is the total.
- :func:`load_jsonl` (``{"prompt": ..., "answer": ...}`` lines) and
  :func:`load_multi_agent_turn` (the official ``data.format: multi_agent_turn`` Parquet:
  ``context``, ``response``, ``agent_id``, ``turn_id``, ``conversation_id``,
  ``reward_model.ground_truth``) with :class:`TextTask`, a pluggable verifier on text.

A verifier that raises scores 0 and is counted (``Rollouts.verifier_errors``); the
loop goes on.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from icml26.teamtr.team import SEP

__all__ = [
    "REQUIRED_COLUMNS",
    "Demonstrations",
    "ModularChain",
    "ProtocolGame",
    "TextTask",
    "TurnRecord",
    "exact_match",
    "load_jsonl",
    "load_multi_agent_turn",
]

log = logging.getLogger(__name__)

FIRST = 4  # first content token id (after PAD, BOS, SEP, HIDDEN)


@dataclass
class Demonstrations:
    """Token sequences with per-position owners and turns (for the BC warm start)."""

    tokens: torch.Tensor
    owner: torch.Tensor
    turn: torch.Tensor
    prompt_len: int
    visible: torch.Tensor


class _TokenTask:
    """Shared mechanics of the token tasks: scoring, masks, layout."""

    turns: int
    prompt_len: int
    verifier: Callable[[list[int], Any], float] | None

    def message_len(self, k: int) -> int:
        return 1

    def visible_mask(self) -> torch.Tensor:
        raise NotImplementedError

    def final_message(self, tokens: torch.Tensor) -> torch.Tensor:
        return tokens[:, -self.message_len(self.turns - 1) :]

    def _vectorised(self, final: torch.Tensor, answers: Sequence) -> torch.Tensor | None:
        return None

    def score(
        self, tokens: torch.Tensor, owner: torch.Tensor, answers: Sequence
    ) -> tuple[torch.Tensor, int]:
        """Sequence-level returns of a batch; raising verifier calls score 0 and are counted."""
        final = self.final_message(tokens)
        if self.verifier is None:
            fast = self._vectorised(final, answers)
            if fast is not None:
                return fast, 0
            raise ValueError(f"{type(self).__name__} has no verifier")
        out, errors = torch.zeros(len(answers)), 0
        for i, (row, ans) in enumerate(zip(final.tolist(), answers, strict=True)):
            try:
                value = float(self.verifier(row, ans))
                if not np.isfinite(value):
                    raise ValueError(f"verifier returned {value}")
                out[i] = value
            except Exception as err:  # the verifier is user code: its failure is data
                errors += 1
                if errors == 1:
                    log.warning("verifier raised %s: %s (scored 0)", type(err).__name__, err)
        return out, errors

    def _layout(self, prompts: torch.Tensor, messages: list[torch.Tensor]) -> Demonstrations:
        from icml26.teamtr.team import BOS

        n = prompts.shape[0]
        parts = [torch.full((n, 1), BOS), prompts]
        owner = [torch.full((n, 1 + self.prompt_len), -1)]
        turn = [torch.full((n, 1 + self.prompt_len), -1)]
        for k, msg in enumerate(messages):
            parts += [torch.full((n, 1), SEP), msg]
            owner += [torch.full((n, 1), -1), torch.full_like(msg, k % self.agents)]
            turn += [torch.full((n, 1), -1), torch.full_like(msg, k)]
        return Demonstrations(
            torch.cat(parts, 1),
            torch.cat(owner, 1),
            torch.cat(turn, 1),
            self.prompt_len,
            self.visible_mask(),
        )


class ProtocolGame(_TokenTask):
    """Referential game over ``agents`` turns (round-robin: one message each).

    Prompt: ``digits`` digits in ``0..base-1`` (token ``FIRST + d``), seen by turn 0 only.
    Messages are one token; the answer (the last message) is the digit token of
    ``sum(digits) mod base``. Warm-start demonstrations follow a random code (a
    permutation of symbols per turn) with probability ``1 - noise`` per message.
    """

    def __init__(self, agents: int = 3, digits: int = 2, base: int = 4, *, verifier=None):
        if agents < 2:
            raise ValueError(f"the protocol game needs at least 2 agents, got {agents}")
        if digits < 1 or base < 2:
            raise ValueError(f"need digits >= 1 and base >= 2, got {digits}, {base}")
        self.agents, self.turns, self.digits, self.base = agents, agents, digits, base
        self.prompt_len = digits
        self.verifier = verifier
        self.vocab = FIRST + 2 * base  # digits, then base symbols

    def visible_mask(self) -> torch.Tensor:
        m = torch.zeros(self.turns, self.prompt_len, dtype=torch.bool)
        m[0] = True
        return m

    def target(self, digits: torch.Tensor) -> torch.Tensor:
        return digits.sum(-1) % self.base

    def sample(self, n: int, generator: torch.Generator) -> tuple[torch.Tensor, list[int]]:
        """``n`` prompts (token ids) and their answers (answer token ids)."""
        d = torch.randint(0, self.base, (n, self.digits), generator=generator)
        return FIRST + d, (FIRST + self.target(d)).tolist()

    def all_prompts(self) -> tuple[torch.Tensor, list[int]]:
        grids = torch.cartesian_prod(*[torch.arange(self.base)] * self.digits)
        grids = grids.reshape(-1, self.digits)
        return FIRST + grids, (FIRST + self.target(grids)).tolist()

    def _vectorised(self, final, answers):
        return (final[:, -1] == torch.as_tensor(answers)).float()

    def demonstrations(self, n: int, generator: torch.Generator, noise: float) -> Demonstrations:
        if not 0 <= noise <= 1:
            raise ValueError(f"noise must lie in [0, 1], got {noise}")
        prompts, _ = self.sample(n, generator)
        codes = [torch.randperm(self.base, generator=generator) for _ in range(self.turns - 1)]
        composed = torch.arange(self.base)
        for c in codes:
            composed = c[composed]
        decode = torch.empty_like(composed)
        decode[composed] = torch.arange(self.base)
        prev, messages = self.target(prompts - FIRST), []
        for k in range(self.turns):
            last = k == self.turns - 1
            clean = decode[prev] if last else codes[k][prev]  # each teacher reads what it sees
            flip = torch.rand(n, generator=generator) < noise
            rand = torch.randint(0, self.base, (n,), generator=generator)
            prev = torch.where(flip, rand, clean)
            messages.append((FIRST + (0 if last else self.base) + prev)[:, None])
        return self._layout(prompts, messages)


class ModularChain(_TokenTask):
    """Turn ``k`` sees prompt digit ``k`` and emits ``(previous message + x_k) mod base``."""

    def __init__(self, agents: int = 3, base: int = 5, *, verifier=None):
        if agents < 2 or base < 2:
            raise ValueError(f"need agents >= 2 and base >= 2, got {agents}, {base}")
        self.agents, self.turns, self.base, self.prompt_len = agents, agents, base, agents
        self.verifier = verifier
        self.vocab = FIRST + base

    def visible_mask(self) -> torch.Tensor:
        return torch.eye(self.turns, dtype=torch.bool)

    def sample(self, n: int, generator: torch.Generator) -> tuple[torch.Tensor, list[int]]:
        d = torch.randint(0, self.base, (n, self.turns), generator=generator)
        return FIRST + d, (FIRST + d.sum(-1) % self.base).tolist()

    def _vectorised(self, final, answers):
        return (final[:, -1] == torch.as_tensor(answers)).float()

    def demonstrations(self, n: int, generator: torch.Generator, noise: float) -> Demonstrations:
        prompts, _ = self.sample(n, generator)
        running = torch.cumsum(prompts - FIRST, 1) % self.base
        messages = []
        for k in range(self.turns):
            flip = torch.rand(n, generator=generator) < noise
            rand = torch.randint(0, self.base, (n,), generator=generator)
            messages.append((FIRST + torch.where(flip, rand, running[:, k]))[:, None])
        return self._layout(prompts, messages)


# -- text formats ------------------------------------------------------------------------
def exact_match(response: str, answer: Any) -> float:
    """1.0 when the stripped response equals the stripped answer."""
    return float(str(response).strip() == str(answer).strip())


class TextTask:
    """Prompts with answers and a pluggable verifier ``verifier(response, answer) -> float``."""

    def __init__(self, prompts: Sequence[str], answers: Sequence[Any], verifier):
        if verifier is None:
            raise ValueError("a task needs a verifier: pass verifier=callable(response, answer)")
        if not callable(verifier):
            raise TypeError(f"verifier must be callable, got {type(verifier).__name__}")
        if len(prompts) != len(answers):
            raise ValueError(f"{len(prompts)} prompts but {len(answers)} answers")
        self.prompts, self.answers, self.verifier = list(prompts), list(answers), verifier

    def __len__(self) -> int:
        return len(self.prompts)

    def score_texts(self, responses: Sequence[str], answers: Sequence[Any]) -> tuple[list, int]:
        """Scores of text responses; raising calls score 0 and are counted."""
        scores, errors = [], 0
        for r, a in zip(responses, answers, strict=True):
            try:
                scores.append(float(self.verifier(r, a)))
            except Exception as err:  # user code
                errors += 1
                log.warning("verifier raised %s: %s (scored 0)", type(err).__name__, err)
                scores.append(0.0)
        return scores, errors


def load_jsonl(path: str | Path, verifier=None) -> TextTask:
    """``{"prompt": str, "answer": any}`` per line -> :class:`TextTask`."""
    prompts, answers = [], []
    for i, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}:{i} is not JSON: {err}") from None
        if not isinstance(rec, dict) or "prompt" not in rec or "answer" not in rec:
            raise ValueError(f"{path}:{i} needs keys 'prompt' and 'answer', got {rec!r:.80}")
        prompts.append(str(rec["prompt"]))
        answers.append(rec["answer"])
    return TextTask(prompts, answers, verifier)


REQUIRED_COLUMNS = ("context", "response", "agent_id", "turn_id", "conversation_id")


@dataclass(frozen=True)
class TurnRecord:
    """One row of the ``multi_agent_turn`` format: an agent's response to the context."""

    conversation_id: str
    turn_id: int
    agent_id: str
    context: str
    response: str
    ground_truth: Any


def load_multi_agent_turn(path: str | Path) -> list[TurnRecord]:
    """Rows of an official ``multi_agent_turn`` Parquet file, sorted by conversation and turn.

    ``reward_model`` may be a struct column with a ``ground_truth`` field (verl's layout)
    or a flat ``reward_model.ground_truth`` column. Needs the ``parquet`` extra (pyarrow).
    """
    try:
        import pyarrow.parquet as pq
    except ImportError as err:  # pragma: no cover - extra not installed
        raise ImportError(
            "reading Parquet needs pyarrow: pip install icml26-teamtr[parquet]"
        ) from err
    table = pq.read_table(str(path))
    cols = set(table.column_names)
    missing = [c for c in REQUIRED_COLUMNS if c not in cols]
    if "reward_model.ground_truth" in cols:
        truth = table.column("reward_model.ground_truth").to_pylist()
    elif "reward_model" in cols:
        rm = table.column("reward_model").to_pylist()
        if any(not isinstance(r, dict) or "ground_truth" not in r for r in rm):
            missing.append("reward_model.ground_truth")
            truth = []
        else:
            truth = [r["ground_truth"] for r in rm]
    else:
        missing.append("reward_model.ground_truth")
        truth = []
    if missing:
        raise ValueError(
            f"{path} is not in the multi_agent_turn layout: missing column(s) {missing}; "
            f"it has {sorted(cols)}"
        )
    data = {c: table.column(c).to_pylist() for c in REQUIRED_COLUMNS}
    records = [
        TurnRecord(
            str(data["conversation_id"][i]),
            int(data["turn_id"][i]),
            str(data["agent_id"][i]),
            str(data["context"][i]),
            str(data["response"][i]),
            truth[i],
        )
        for i in range(table.num_rows)
    ]
    return sorted(records, key=lambda r: (r.conversation_id, r.turn_id))
