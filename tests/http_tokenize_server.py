"""A loopback stand-in for vLLM's and SGLang's ``POST /tokenize``, for the tests.

Serves, on 127.0.0.1 only, from a reference engine built with our registry:

  /tokenize, /vllm/tokenize   vLLM shape: prompt is a string
  /sglang/tokenize            SGLang shape: prompt is a string or a list of strings
  /fail/tokenize              always HTTP 500
  /garbage/tokenize           HTTP 200 with a body that is not JSON

Like the real servers it parses special-token text in every prompt (there is no
allow_special switch), and it insists on ``add_special_tokens: false`` and, when
a model name is sent, on the served one (vLLM answers 404 to an unknown model).
"""

from __future__ import annotations

import collections
import contextlib
import ipaddress
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from verify.engines import build_engine

MAX_BODY = 4 * 1024 * 1024
MAX_MODEL_LEN = 8192


class _Handler(BaseHTTPRequestHandler):
    server: "TokenizeServer"
    timeout = 10  # seconds a connection may sit idle
    protocol_version = "HTTP/1.0"

    def log_message(self, format, *args):  # keep test output quiet
        pass

    def _reply(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, obj: dict) -> None:
        self._reply(status, json.dumps(obj).encode())

    def do_GET(self):
        self._json(404, {"error": "not found"})

    def do_POST(self):
        shape = {"/tokenize": "vllm", "/vllm/tokenize": "vllm", "/sglang/tokenize": "sglang",
                 "/fail/tokenize": "fail", "/garbage/tokenize": "garbage"}.get(self.path)
        if shape is None:
            return self._json(404, {"error": f"no route {self.path}"})
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            return self._json(411, {"error": "Content-Length required"})
        if not 0 <= length <= MAX_BODY:
            return self._json(413, {"error": "body too large"})
        raw = self.rfile.read(length)
        self.server.requests.append((self.path, raw))
        if shape == "fail":
            return self._json(500, {"object": "error", "message": "simulated internal error", "code": 500})
        if shape == "garbage":
            return self._reply(200, b"<html>definitely not json</html>", "text/html")
        try:
            req = json.loads(raw)
        except ValueError:
            return self._json(400, {"error": "body is not JSON"})
        if req.get("add_special_tokens", True) is not False:
            return self._json(400, {"error": "this test server only serves add_special_tokens=false"})
        if "model" in req and req["model"] != self.server.model:
            return self._json(404, {"object": "error", "message": f"The model `{req['model']}` does not exist."})
        prompt = req.get("prompt")
        encode = self.server.encode
        if isinstance(prompt, str):
            tokens = encode([prompt])[0]
            return self._json(200, {"tokens": tokens, "count": len(tokens), "max_model_len": MAX_MODEL_LEN})
        if shape == "sglang" and isinstance(prompt, list) and all(isinstance(p, str) for p in prompt):
            tokens = encode(prompt)
            return self._json(200, {"tokens": tokens, "count": [len(t) for t in tokens],
                                    "max_model_len": MAX_MODEL_LEN})
        return self._json(400, {"error": "prompt must be a string" + (" or a list of strings" if shape == "sglang" else "")})


class TokenizeServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, reference_spec: str = "tiktoken:cl100k_base", model: str = "test-model",
                 host: str = "127.0.0.1"):
        if not ipaddress.ip_address(host).is_loopback:
            raise ValueError(f"the test server binds loopback addresses only, not {host}")
        self.reference = build_engine(reference_spec)
        self.model = model
        self.requests: collections.deque[tuple[str, bytes]] = collections.deque(maxlen=1000)  # bounded log
        super().__init__((host, 0), _Handler)

    def encode(self, texts: list[str]) -> list[list[int]]:
        # Real endpoints always parse special-token text in the prompt.
        return [ids.tolist() for ids in self.reference.encode_texts(texts, allow_special=True)]

    @property
    def base_url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"


@contextlib.contextmanager
def serve_in_thread(**kwargs):
    """Start a TokenizeServer on a free loopback port; yield it; shut it down."""
    server = TokenizeServer(**kwargs)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
