"""The OpenAI-compatible HTTP client behind :class:`HTTPBackend`.

Option scoring uses ``/completions`` with ``echo`` and ``logprobs`` (the summed
log-probabilities of the option's tokens after the prompt); ``generate`` uses
``/chat/completions``. The API key is held by a wrapper whose repr hides it, is sent only
in the ``Authorization`` header, and is scrubbed from every error message.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence

__all__ = ["BackendError", "HTTPBackend"]


class BackendError(RuntimeError):
    """A backend failed on one request (message free of credentials)."""


def _check_prompt_options(prompt: object, options: object) -> list[str]:
    if not isinstance(prompt, str):
        raise TypeError(f"prompt must be a str, got {type(prompt).__name__}")
    if isinstance(options, str) or not isinstance(options, Sequence):
        raise TypeError("options must be a sequence of strings")
    opts = list(options)
    if not opts or not all(isinstance(o, str) and o for o in opts):
        raise ValueError("options must be non-empty strings, at least one")
    return opts


class _Secret:
    """Holds a credential; its repr and str never show it."""

    __slots__ = ("_value",)

    def __init__(self, value: str | None):
        self._value = value

    def get(self) -> str | None:
        return self._value

    def __repr__(self) -> str:
        return "<secret>" if self._value else "None"

    __str__ = __repr__


def _check_base_url(base_url: object) -> str:
    if not isinstance(base_url, str):
        raise TypeError(f"base_url must be a str, got {type(base_url).__name__}")
    parts = urllib.parse.urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(
            "base_url must be an http(s) URL with a host, such as http://127.0.0.1:8000/v1; "
            f"got {base_url!r}"
        )
    if parts.query or parts.fragment or parts.username or parts.password:
        raise ValueError("base_url must not carry a query, a fragment or credentials")
    return base_url.rstrip("/")


class HTTPBackend:
    """An OpenAI-compatible endpoint (``/completions`` with ``echo`` and ``logprobs``)."""

    def __init__(self, base_url: str, model: str, *, api_key: str | None = None,
                 timeout: float = 60.0):  # fmt: skip
        self.base_url = _check_base_url(base_url)
        if not isinstance(model, str) or not model:
            raise ValueError("model must be a non-empty model name")
        if api_key is not None and not isinstance(api_key, str):
            raise TypeError("api_key must be a str or None")
        self.model = model
        self._key = _Secret(api_key)
        self.timeout = float(timeout)

    def __repr__(self) -> str:
        key = "set" if self._key.get() else "unset"
        return f"HTTPBackend(base_url={self.base_url!r}, model={self.model!r}, api_key={key})"

    def _scrub(self, text: str) -> str:
        key = self._key.get()
        return text.replace(key, "<secret>") if key else text

    def _post(self, path: str, payload: dict) -> dict:
        headers = {"Content-Type": "application/json"}
        if self._key.get():
            headers["Authorization"] = f"Bearer {self._key.get()}"
        req = urllib.request.Request(
            self.base_url + path, data=json.dumps(payload).encode(), headers=headers
        )
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return json.loads(resp.read().decode())
        except urllib.error.HTTPError as err:
            body = err.read().decode(errors="replace")[:200]
            raise BackendError(self._scrub(f"HTTP {err.code} from {path}: {body}")) from None
        except (urllib.error.URLError, TimeoutError, OSError, json.JSONDecodeError) as err:
            raise BackendError(self._scrub(f"{type(err).__name__} on {path}: {err}")) from None

    def score_options(self, prompt: str, options: Sequence[str]) -> list[float]:
        opts = _check_prompt_options(prompt, options)
        out = []
        for o in opts:
            data = self._post("/completions", {
                "model": self.model, "prompt": prompt + " " + o, "max_tokens": 0,
                "echo": True, "logprobs": 0, "temperature": 0,
            })  # fmt: skip
            try:
                lp = data["choices"][0]["logprobs"]
                pairs = zip(lp["text_offset"], lp["token_logprobs"], strict=True)
                out.append(
                    float(sum(v for off, v in pairs if off >= len(prompt) and v is not None))
                )
            except (KeyError, IndexError, TypeError, ValueError) as err:
                raise BackendError(f"malformed /completions answer: {type(err).__name__}") from None
        return out

    def generate(self, prompt: str, max_tokens: int = 128) -> str:
        """A greedy chat completion (restoration / explicit-denoising transcripts)."""
        if not isinstance(prompt, str):
            raise TypeError("prompt must be a str")
        data = self._post("/chat/completions", {
            "model": self.model, "messages": [{"role": "user", "content": prompt}],
            "max_tokens": int(max_tokens), "temperature": 0,
        })  # fmt: skip
        try:
            return str(data["choices"][0]["message"]["content"])
        except (KeyError, IndexError, TypeError) as err:
            raise BackendError(
                f"malformed /chat/completions answer: {type(err).__name__}"
            ) from None
