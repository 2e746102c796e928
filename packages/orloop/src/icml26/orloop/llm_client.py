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

import ipaddress
import json
import logging
import math
import os
import re
import urllib.error
import urllib.parse
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
- FLIP_SENSE(constraint): turn a <= constraint into >= (or back) with the same right-hand side
- RESET: restore the original model
- SUBMIT: submit the current model

## Response Format
Always respond with one JSON object:
{"reasoning": "...", "action": "ACTION_NAME", "target": "name", "value": 0.0, "value2": 0.0,
 "diagnosis": ["names of the constraints you believe conflict"]}
"target" is required for CHECK_SLACK, DROP_CONSTRAINT, RELAX_CONSTRAINT, UPDATE_RHS,
UPDATE_BOUNDS, FLIP_SENSE;
"value" for RELAX_CONSTRAINT, UPDATE_RHS, UPDATE_BOUNDS (lb); "value2" for
UPDATE_BOUNDS (ub)."""


log = logging.getLogger(__name__)


class ChatError(RuntimeError):
    """The endpoint could not be reached or answered with something other than a chat reply."""


def is_loopback(host: str | None) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if not host:
        return False
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass
class ChatClient:
    """A minimal OpenAI-compatible chat client.

    Secrets: ``api_key`` is never part of ``repr`` or of an error message. When it
    is not given, the environment variable named by ``api_key_env`` is read at the
    moment a request is sent (not at construction), and only for ``https`` URLs or
    loopback hosts: a key is never sent over plain ``http`` to another host (an
    explicit key with such a URL is a ``ValueError``). Local servers need no key;
    ``api_key_env=None`` turns the environment look-up off.
    """

    base_url: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    api_key_env: str | None = "OPENAI_API_KEY"
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
        if self.api_key is not None and not isinstance(self.api_key, str):
            raise TypeError(f"api_key must be a string, got {type(self.api_key).__name__}")
        if self.api_key and not self.key_may_be_sent:
            raise ValueError(
                f"refusing to send an API key over plain http to {self.host!r}; "
                "use an https:// base_url or a loopback host"
            )

    @property
    def host(self) -> str | None:
        return urllib.parse.urlsplit(self.base_url).hostname

    @property
    def key_may_be_sent(self) -> bool:
        """A key travels only over https or to a loopback host."""
        return self.base_url.startswith("https://") or is_loopback(self.host)

    def __repr__(self) -> str:
        key = "set" if self.api_key else "unset"
        return (
            f"ChatClient(base_url={self.base_url!r}, model={self.model!r}, api_key=<{key}>, "
            f"api_key_env={self.api_key_env!r}, backend={self.backend!r})"
        )

    def _key(self) -> str | None:
        """The key to send now, read from the environment only when needed and allowed."""
        if not self.key_may_be_sent:
            return None
        if self.api_key:
            return self.api_key
        return os.environ.get(self.api_key_env) if self.api_key_env else None

    def _scrub(self, text: str) -> str:
        key = self._key()
        return text.replace(key, "***") if key else text

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
        key = self._key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        req = urllib.request.Request(
            f"{self.base_url}/chat/completions", data=body, headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                data = json.loads(resp.read().decode())
        except urllib.error.HTTPError as err:
            raise ChatError(
                self._scrub(f"{self.base_url} answered HTTP {err.code}: {err.reason}")
            ) from None
        except (urllib.error.URLError, TimeoutError, OSError) as err:
            raise ChatError(self._scrub(f"could not reach {self.base_url}: {err}")) from None
        except json.JSONDecodeError as err:
            raise ChatError(f"{self.base_url} did not answer with JSON: {err.msg}") from None
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
            base_url=self.base_url, api_key=self._key() or "none", timeout=self.timeout
        )
        try:
            resp = client.chat.completions.create(
                model=self.model,
                messages=messages,  # type: ignore[arg-type]
                temperature=self.temperature,
                max_tokens=self.max_tokens,
            )
        except openai.OpenAIError as err:
            raise ChatError(self._scrub(f"{self.base_url}: {err}")) from None
        if resp.usage is not None:
            self.usage["prompt"] += resp.usage.prompt_tokens
            self.usage["completion"] += resp.usage.completion_tokens
        self.usage["calls"] += 1
        if not resp.choices:
            raise ChatError(f"{self.base_url} answered without choices")
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
            log.warning("chat endpoint failed: %s", err)
            reply = json.dumps({"action": "INVALID", "reasoning": str(err)})
        self.turns.append({"role": "assistant", "content": reply})
        return reply


class ChatNewsvendorAgent:
    """ORBias decisions from a chat model: it is asked for one order quantity.

    A failed call or a reply without a usable number is not an exception: the
    decision is NaN (counted in ``failures``), which the bias metrics skip and report.
    """

    def __init__(self, client: ChatClient, *, name: str | None = None) -> None:
        self.client = client
        self.name = name or f"LLM ({client.model})"
        self.failures = 0

    def decide(self, instance: Any) -> float:
        prompt = (
            f"{instance.describe()}\nHow many units should be ordered? "
            'Answer with one JSON object: {"order_quantity": <number>}.'
        )
        try:
            reply = self.client.complete([{"role": "user", "content": prompt}])
        except ChatError as err:
            log.warning("chat endpoint failed: %s", err)
            self.failures += 1
            return math.nan
        match = re.search(r'"order_quantity"\s*:\s*(-?[0-9.eE+-]+)', reply) or re.search(
            r"(-?\d+(?:\.\d+)?)", reply
        )
        try:
            value = float(match.group(1)) if match else math.nan
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            log.warning("the model's reply holds no order quantity: %r", reply[:120])
            self.failures += 1
            return math.nan
        return value
