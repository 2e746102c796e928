import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import ClassVar

import pytest

from icml26.charperturb.backends import BackendError, HTTPBackend, score_items
from icml26.charperturb.tasks import make_items

KEY = "sk-test-SECRET-123456"


class _Fake(BaseHTTPRequestHandler):
    seen: ClassVar[list] = []

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append((self.path, self.headers.get("Authorization"), body))
        if "FAIL" in body.get("prompt", ""):
            self.send_response(500)
            self.end_headers()
            self.wfile.write(f"internal error, key was {KEY}".encode())
            return
        text = body["prompt"]
        # one "token" per word; log-prob = -len(word) so shorter options win
        offs, lps, pos = [], [], 0
        for w in text.split(" "):
            offs.append(pos)
            lps.append(-float(len(w)))
            pos += len(w) + 1
        out = {"choices": [{"logprobs": {"text_offset": offs, "token_logprobs": lps}}]}
        data = json.dumps(out).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def server():
    srv = HTTPServer(("127.0.0.1", 0), _Fake)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    yield f"http://127.0.0.1:{srv.server_port}/v1"
    srv.shutdown()
    srv.server_close()


def test_scores_and_key_header(server):
    b = HTTPBackend(server, "fake", api_key=KEY)
    assert b.score_options("The capital is", ["Rome", "Paris"]) == [-4.0, -5.0]
    path, auth, body = _Fake.seen[-1]
    assert path == "/v1/completions" and auth == f"Bearer {KEY}" and body["echo"] is True


def test_key_never_in_repr_log_or_error(server, caplog):
    b = HTTPBackend(server, "fake", api_key=KEY)
    assert KEY not in repr(b) and KEY not in str(b.__dict__)
    items = make_items("cloze", 2, 0)
    items[1].prompt = "FAIL " + items[1].prompt
    with caplog.at_level(logging.DEBUG):
        res = score_items(b, items)
    assert res[0].error is None and res[0].choice is not None
    assert res[1].error and "HTTP 500" in res[1].error
    assert KEY not in res[1].error and "<secret>" in res[1].error
    assert KEY not in caplog.text


def test_unreachable_server_is_data():
    b = HTTPBackend("http://127.0.0.1:9/v1", "fake", api_key=KEY, timeout=2)
    res = score_items(b, make_items("cloze", 1, 0))
    assert res[0].error and KEY not in res[0].error
    with pytest.raises(BackendError):
        b.score_options("x", ["y"])


@pytest.mark.parametrize(
    "url", ["127.0.0.1:8000", "ftp://host/v1", "http://", "http://h/v1?k=1", "http://user:pw@h/v1"]
)
def test_malformed_base_url(url):
    with pytest.raises(ValueError, match="base_url"):
        HTTPBackend(url, "m")


def test_bad_arguments():
    with pytest.raises(TypeError):
        HTTPBackend(None, "m")
    b = HTTPBackend("http://127.0.0.1:1/v1", "m")
    with pytest.raises(ValueError, match="options"):
        b.score_options("p", [])
    with pytest.raises(TypeError, match="prompt"):
        b.score_options(3, ["a"])


@pytest.mark.slow  # importing transformers takes 20-60 s on the shared machine
def test_kv_cached_scoring_equals_per_option_scoring(capfd):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from icml26.charperturb.backends import TransformersBackend

    class Tok:
        def encode(self, s, add_special_tokens=False):
            return [ord(c) % 100 for c in s]

    torch.manual_seed(0)
    cfg = transformers.GPT2Config(
        vocab_size=100, n_layer=2, n_embd=32, n_head=2, bos_token_id=0, eos_token_id=0
    )
    model = transformers.GPT2LMHeadModel(cfg).eval()
    opts = ["Paris", "Rome", "Berlin", "x"]
    a = TransformersBackend(model, Tok()).score_options("The capital is", opts)
    b = TransformersBackend(model, Tok(), cached=False).score_options("The capital is", opts)
    assert a == pytest.approx(b, abs=1e-4)
    assert len(set(a)) == 4
    err = capfd.readouterr().err
    assert "deprecated" not in err, err  # no cache-name warning from transformers
