"""The LLM agent against a stub OpenAI-compatible server on the loopback interface."""

import json
import logging
import math
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from icml26.orloop import (
    ChatClient,
    ChatNewsvendorAgent,
    DebugState,
    LLMAgent,
    Newsvendor,
    run_episode,
)


class StubServer:
    """Answers /v1/chat/completions with scripted replies, records the requests."""

    def __init__(self, replies):
        self.replies = list(replies)
        self.requests = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.requests.append((self.path, body, self.headers.get("Authorization")))
                reply = stub.replies.pop(0) if stub.replies else '{"action": "SUBMIT"}'
                if callable(reply):
                    reply = reply(body)
                data = json.dumps(
                    {
                        "choices": [{"message": {"role": "assistant", "content": reply}}],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 5},
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def _drop_first_iis_row(body):
    prompt = body["messages"][-1]["content"]
    line = next(ln for ln in prompt.splitlines() if "Conflicting Constraints" in ln)
    first = line.split("[")[1].split(",")[0].strip(" '\"]")
    return json.dumps({"reasoning": "drop it", "action": "DROP_CONSTRAINT", "target": first})


def test_llm_agent_repairs_through_the_stub(row_conflict):
    from icml26.orloop.env import RepairEnv

    replies = ["I think we should drop something.", _drop_first_iis_row]
    with StubServer(replies) as stub:
        client = ChatClient(stub.url, "stub-model", api_key="k")
        agent = LLMAgent(client)
        env = RepairEnv(row_conflict, max_steps=4)
        state, _ = env.reset()
        state, r, *_ = env.step(agent.act(state))  # prose: an error observation, not a crash
        assert "no JSON object" in state.last_result["error"] and r == -51
        state, r, term, *_ = env.step(agent.act(state))
        assert term and state.is_optimal()
    path, body, auth = stub.requests[0]
    assert path == "/v1/chat/completions" and body["model"] == "stub-model"
    assert auth == "Bearer k" and body["messages"][0]["role"] == "system"
    assert client.usage == {"prompt": 20, "completion": 10, "calls": 2}


def test_llm_agent_on_an_instance_and_unreachable_endpoint():
    from icml26.orloop import make_instance
    from icml26.shared import numpy_rng

    inst = make_instance(numpy_rng(5, "llm"), "G")
    with StubServer([_drop_first_iis_row] * 3) as stub:
        res = run_episode(LLMAgent(ChatClient(stub.url, "m")), inst, max_steps=4)
    assert res.success and res.steps <= 3
    dead = ChatClient("http://127.0.0.1:9/v1", "m", timeout=0.5)
    res = run_episode(LLMAgent(dead), inst, max_steps=2)
    assert not res.success and res.steps == 2
    with pytest.raises(ValueError, match="http"):
        ChatClient("ftp://x", "m")


def test_newsvendor_agent():
    nv = Newsvendor("normal", 100.0, 20.0, 10.0, 6.0, 2.0)
    with StubServer(['{"order_quantity": 97.5}', "no number here"]) as stub:
        agent = ChatNewsvendorAgent(ChatClient(stub.url, "m"))
        assert agent.decide(nv) == 97.5
        assert math.isnan(agent.decide(nv)) and agent.failures == 1
    dead = ChatNewsvendorAgent(ChatClient("http://127.0.0.1:9/v1", "m", timeout=0.5))
    assert math.isnan(dead.decide(nv)) and dead.failures == 1  # ChatError does not escape


def test_the_key_stays_secret(monkeypatch, caplog):
    client = ChatClient("https://api.example.com/v1", "m", api_key="sk-secret-123")
    assert "sk-secret-123" not in repr(client) and "sk-secret-123" not in str(client)
    assert "api_key=<set>" in repr(client)
    # never over plain http to another host, explicit or from the environment
    with pytest.raises(ValueError, match="plain http"):
        ChatClient("http://10.1.2.3:8000/v1", "m", api_key="sk-secret-123")
    monkeypatch.setenv("ORLOOP_TEST_KEY", "sk-env-456")
    lan = ChatClient("http://10.1.2.3:8000/v1", "m", api_key_env="ORLOOP_TEST_KEY")
    assert lan._key() is None and "sk-env-456" not in repr(lan)
    # the environment is read when a request is sent, not at construction
    local = ChatClient("http://localhost:1/v1", "m", api_key_env="ORLOOP_TEST_KEY")
    assert local.api_key is None and local._key() == "sk-env-456"
    with StubServer([_drop_first_iis_row]) as stub:
        c = ChatClient(stub.url, "m", api_key_env="ORLOOP_TEST_KEY")
        c.complete([{"role": "user", "content": "Conflicting Constraints: ['a']"}])
    assert stub.requests[0][2] == "Bearer sk-env-456"
    # a failing endpoint logs the failure, never the key
    dead = ChatClient("http://127.0.0.1:9/v1", "m", api_key="sk-secret-123", timeout=0.5)
    with caplog.at_level(logging.DEBUG):
        LLMAgent(dead).act(DebugState("", "INFEASIBLE", [], [], "", [], [], 0, None))
    assert "chat endpoint failed" in caplog.text and "sk-secret-123" not in caplog.text


@pytest.mark.slow
def test_openai_backend():
    pytest.importorskip("openai")
    with StubServer(['{"action": "GET_IIS"}']) as stub:
        client = ChatClient(stub.url, "m", backend="openai", api_key="k")
        assert (
            json.loads(client.complete([{"role": "user", "content": "hi"}]))["action"] == "GET_IIS"
        )
