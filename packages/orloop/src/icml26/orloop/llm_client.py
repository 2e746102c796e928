"""An agent that talks to any OpenAI-compatible chat endpoint.

The paper evaluates 26 chat models through their APIs with the JSON action format
of ``prompts.py``. :class:`ChatClient` posts ``/chat/completions`` requests
(``base_url`` and ``model`` from the config: a hosted API, vLLM, SGLang, Ollama, or
a local test server) with the standard library, or through the ``openai`` package
when ``backend="openai"`` (extra ``icml26-orloop[openai]``). :class:`LLMAgent`
turns each :class:`~icml26.orloop.env.DebugState` into a prompt and returns the
reply text; the environment parses it, and a malformed reply becomes an error
observation, never an exception. :class:`ChatNewsvendorAgent` asks the same
endpoint for ORBias order quantities.
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from icml26.orloop.env import DebugState

SYSTEM_PROMPT = """You are an expert Operations Research debugger. Your task is to diagnose and \
repair infeasible optimization models.

## Your Goal
Transform an INFEASIBLE model into an OPTIMAL one by identifying and fixing constraint \
conflicts, while keeping the problem the modeller intended.

## Available Actions
- GET_IIS: compute the Irreducible Infeasible Subsystem
- CHECK_SLACK(constraint): inspect a constraint (or a variable's bounds)
- DROP_CONSTRAINT(constraint): remove a constraint
- RELAX_CONSTRAINT(constraint, epsilon): loosen a constraint's bound by epsilon
- UPDATE_RHS(constraint, value): set the right-hand side
- UPDATE_BOUNDS(variable, lb, ub): set a variable's bounds
- RESET: restore the original model
- SUBMIT: submit the current model

## Response Format
Always respond with one JSON object:
{"reasoning": "...", "action": "ACTION_NAME", "target": "name", "value": 0.0, "value2": 0.0,
 "diagnosis": ["names of the constraints you believe conflict"]}
"target" is required for CHECK_SLACK, DROP_CONSTRAINT, RELAX_CONSTRAINT, UPDATE_RHS,
UPDATE_BOUNDS; "value" for RELAX_CONSTRAINT, UPDATE_RHS, UPDATE_BOUNDS (lb); "value2" for
UPDATE_BOUNDS (ub)."""


class ChatError(RuntimeError):
    """The endpoint could not be reached or answered with something other than a chat reply."""


@dataclass
class ChatClient:
    """A minimal OpenAI-compatible chat client.

    ``api_key`` defaults to the environment variable named by ``api_key_env`` (none
    is needed for local servers).
    """

    base_url: str
    model: str
    api_key: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float = 0.0
    max_tokens: int = 512
    timeout: float = 60.0
    backend: str = "urllib"
    usage: dict[str, int] = field(
        default_factory=lambda: {"prompt": 0, "completion": 0, "calls": 0}
    )

    def __post_init__(self) -> None:
        if not re.match(r"^https?://", self.base_url):
            raise ValueError(f"base_url must start with http:// or https://, got {self.base_url!r}")
        if not self.model:
            raise ValueError("model must name the served model")
        if self.backend not in ("urllib", "openai"):
            raise ValueError(f"backend must be 'urllib' or 'openai', got {self.backend!r}")
        self.base_url = self.base_url.rstrip("/")
        if self.api_key is None:
            self.api_key = os.environ.get(self.api_key_env)

    def complete(self, messages: list[dict[str, str]]) -> str:
        """The assistant's reply to ``messages``."""
        if self.backend == "openai":
            return self._complete_openai(messages)
        body = json.dumps(
            {
                "model": self.model,
                "messages": messages,
                "temperature": self.temperature,
                "max_tokens": self.max_tokens,
            }
        ).encode()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        req = urllib.request.Request(
            f"{self.base_url}/chat/completions", data=body, headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                data = json.loads(resp.read().decode())
        except urllib.error.HTTPError as err:
            raise ChatError(f"{self.base_url} answered HTTP {err.code}: {err.reason}") from err
        except (urllib.error.URLError, TimeoutError, OSError) as err:
            raise ChatError(f"could not reach {self.base_url}: {err}") from err
        except json.JSONDecodeError as err:
            raise ChatError(f"{self.base_url} did not answer with JSON: {err}") from err
        try:
            text = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise ChatError(f"{self.base_url} answered without choices[0].message") from None
        usage = data.get("usage") or {}
        self.usage["prompt"] += int(usage.get("prompt_tokens", 0))
        self.usage["completion"] += int(usage.get("completion_tokens", 0))
        self.usage["calls"] += 1
        return text or ""

    def _complete_openai(self, messages: list[dict[str, str]]) -> str:
        try:
            import openai
        except ImportError as err:
            raise ChatError(
                "backend='openai' needs the extra: pip install icml26-orloop[openai]"
            ) from err
        client = openai.OpenAI(
            base_url=self.base_url, api_key=self.api_key or "none", timeout=self.timeout
        )
        try:
            resp = client.chat.completions.create(
                model=self.model,
                messages=messages,  # type: ignore[arg-type]
                temperature=self.temperature,
                max_tokens=self.max_tokens,
            )
        except openai.OpenAIError as err:
            raise ChatError(f"{self.base_url}: {err}") from err
        if resp.usage is not None:
            self.usage["prompt"] += resp.usage.prompt_tokens
            self.usage["completion"] += resp.usage.completion_tokens
        self.usage["calls"] += 1
        return resp.choices[0].message.content or ""


class LLMAgent:
    """A repair agent backed by a chat model; keeps the episode's conversation."""

    def __init__(
        self,
        client: ChatClient,
        *,
        name: str | None = None,
        system_prompt: str = SYSTEM_PROMPT,
        keep_turns: int = 4,
    ) -> None:
        self.client = client
        self.name = name or f"LLM ({client.model})"
        self.system_prompt = system_prompt
        self.keep_turns = keep_turns
        self.turns: list[dict[str, str]] = []

    def reset(self) -> None:
        self.turns = []

    def act(self, state: DebugState) -> str:
        self.turns.append({"role": "user", "content": state.to_prompt()})
        recent = self.turns[-(2 * self.keep_turns - 1) :]
        messages = [{"role": "system", "content": self.system_prompt}, *recent]
        try:
            reply = self.client.complete(messages)
        except ChatError as err:
            # an unreachable endpoint is an invalid action, so the episode records it
            reply = json.dumps({"action": "INVALID", "reasoning": str(err)})
        self.turns.append({"role": "assistant", "content": reply})
        return reply


class ChatNewsvendorAgent:
    """ORBias decisions from a chat model: it is asked for one order quantity."""

    def __init__(self, client: ChatClient, *, name: str | None = None) -> None:
        self.client = client
        self.name = name or f"LLM ({client.model})"

    def decide(self, instance: Any) -> float:
        prompt = (
            f"{instance.describe()}\nHow many units should be ordered? "
            'Answer with one JSON object: {"order_quantity": <number>}.'
        )
        reply = self.client.complete([{"role": "user", "content": prompt}])
        match = re.search(r'"order_quantity"\s*:\s*(-?[0-9.eE+-]+)', reply) or re.search(
            r"(-?\d+(?:\.\d+)?)", reply
        )
        if not match:
            raise ValueError(f"the model's reply holds no order quantity: {reply[:120]!r}")
        return float(match.group(1))
