"""Adapter for a running tokenize endpoint: ``http:URL``.

Specs::

    http://127.0.0.1:8000?model=meta-llama/Llama-3.1-8B           (vLLM, the default api)
    http:http://gpu-box:30000?api=sglang&model=qwen&timeout=30
    http:https://tok.example.org/v1/tokenize?api=vllm

``http://HOST:PORT`` on its own is a complete spec (the adapter is ``http``, the
target ``//HOST:PORT``); ``http:`` followed by a full URL works for https too. A
URL with no path posts to ``/tokenize``; any other path is used as given.
Everything after ``?`` is adapter options, so the URL itself carries no query.

Options: ``api`` = ``vllm`` (default) or ``sglang``; ``model`` = the served model
name (sent only when given); ``timeout`` = seconds for a whole HTTP request -- connect,
send, headers and body, not each read (default 60); ``entry`` = ``single`` or ``batch``
(SGLang only, see below). An answer's body is read up to ``MAX_HTTP_BODY_BYTES``
(``verify.limits``); a larger one is an error for that call, never held whole.

Entry points (``verify.engines.base``): vLLM has ``single`` (one request per text);
SGLang has ``batch`` (the default: one request with a list prompt per batch; a
batch of one text is sent as a plain prompt) and ``single`` (a plain prompt per text).

Wire formats (both with ``"add_special_tokens": false``, so no BOS/EOS is added):

* vLLM ``POST /tokenize`` ``{"model", "prompt": str, "add_special_tokens"}`` ->
  ``{"tokens": [int], "count": int, "max_model_len": int}``; one request per text.
* SGLang ``POST /tokenize`` ``{"model", "prompt": str | [str], "add_special_tokens"}``
  -> ``{"tokens": [int] | [[int]], "count": ...}``; one request per batch.

Special tokens -- read this before trusting a clean run. Neither endpoint has an
``allow_special`` switch: the server's tokenizer always parses special-token
text in the prompt (``"<|endoftext|>"`` becomes the special token). The adapter
can therefore not encode such text *as ordinary text*, which is half of what
``Capabilities.special_tokens`` promises, so it declares
``special_tokens=False``: the harness sends it plain samples only and skips those
with ``allow_special=True`` segments. Plain text that happens to contain a
special-token literal is sent unchanged, and where the server turns it into a
control token that is a real divergence from the reference (the same thing
would happen to a user's prompt), which the harness reports. The adapter never
hides it. ``encode_texts(..., allow_special=True)``, if called directly, sends
the text unchanged too, which matches the server's always-parse behaviour.

An HTTP error, an unreachable server, a timeout, or a body that is not the
expected JSON raises :class:`EngineHTTPError` with the URL, status and the start
of the body; the harness records it as an error finding.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from verify.engines.base import Adapter, Capabilities, EngineIdentity, as_token_array
from verify.engines.http_transport import AnswerTooLarge, RequestTimedOut, TransportError, post
from verify.errors import ConfigError
from verify.limits import MAX_HTTP_BODY_BYTES

APIS = ("vllm", "sglang")
BODY_EXCERPT = 300


class EngineHTTPError(RuntimeError):
    """The tokenize endpoint failed: HTTP error, unreachable, timeout, or malformed body."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


def endpoint_url(target: str) -> str:
    url = "http:" + target if target.startswith("//") else target
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"http engine needs an http(s) URL such as http://127.0.0.1:8000, got '{target}'")
    path = parts.path if parts.path not in ("", "/") else "/tokenize"
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


class HTTPEngine(Adapter):
    adapter_name = "http"
    package = None
    capabilities = Capabilities(special_tokens=False, segments=False, decode=False, entry_points=("single",))
    sglang_capabilities = Capabilities(special_tokens=False, segments=False, decode=False,
                                       entry_points=("batch", "single"))

    def __init__(self, target, options=None, spec=None):
        super().__init__(target, options, spec)
        self.url = endpoint_url(target)
        self.api = str(self.options.get("api", "vllm")).lower()
        if self.api not in APIS:
            raise ConfigError(f"http engine option api={self.api!r}: use one of {', '.join(APIS)}")
        self.model = self.options.get("model")
        try:
            self.timeout = float(self.options.get("timeout", 60))
        except (TypeError, ValueError):
            raise ConfigError(f"http engine option timeout={self.options.get('timeout')!r} is not a number") from None
        if self.timeout <= 0:
            raise ConfigError("http engine option timeout must be positive")
        self.vocab_name = None if self.model is None else str(self.model)
        if self.api == "sglang":
            self.capabilities = self.sglang_capabilities  # an instance attribute shadows the class default
        self.check_entry()

    @classmethod
    def declared_entry_points(cls, target, options):
        capabilities = cls.sglang_capabilities if str(options.get("api", "vllm")).lower() == "sglang" \
            else cls.capabilities
        entry = options.get("entry")
        return capabilities, str(entry) if entry is not None else capabilities.entry_points[0]

    # --- transport ----------------------------------------------------------
    def _post(self, payload: dict[str, Any]) -> dict[str, Any]:
        data = json.dumps(payload, ensure_ascii=True).encode("ascii")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        where = f"{self.api} tokenize endpoint {self.url}"
        try:
            status, reason, body = post(self.url, data, headers, self.timeout, MAX_HTTP_BODY_BYTES)
        except RequestTimedOut as exc:
            raise EngineHTTPError(f"{where} timed out: {exc} (?timeout={self.timeout:g})") from None
        except AnswerTooLarge as exc:
            raise EngineHTTPError(f"{where} answered too much: {exc}") from None
        except TransportError as exc:
            raise EngineHTTPError(f"{where} is unreachable or cut the connection: {exc}") from None
        if not 200 <= status < 300:
            raise EngineHTTPError(f"{where} answered HTTP {status} {reason}: {_excerpt(body)}", status)
        try:
            obj = json.loads(body)
        except (ValueError, RecursionError):
            raise EngineHTTPError(f"{where} answered with a body that is not JSON: {_excerpt(body)}") from None
        if not isinstance(obj, dict) or "tokens" not in obj:
            raise EngineHTTPError(f"{where} answered without a 'tokens' field: {_excerpt(body)}")
        return obj

    def _payload(self, prompt: str | list[str]) -> dict[str, Any]:
        payload: dict[str, Any] = {"prompt": prompt, "add_special_tokens": False}
        if self.model is not None:
            payload["model"] = str(self.model)
        return payload

    def _tokens(self, tokens: Any, count: Any) -> np.ndarray:
        if not isinstance(tokens, list):
            raise EngineHTTPError(f"{self.url}: 'tokens' is {type(tokens).__name__}, expected a list of ids")
        try:
            ids = as_token_array(tokens)
        except ValueError as exc:
            raise EngineHTTPError(f"{self.url}: malformed token ids: {exc}") from None
        if isinstance(count, int) and not isinstance(count, bool) and count != ids.size:
            raise EngineHTTPError(f"{self.url}: 'count' is {count} but {ids.size} tokens came back")
        return ids

    # --- adapter ------------------------------------------------------------
    # allow_special cannot be expressed on these endpoints (see module docstring).
    def encode_one(self, text, allow_special):
        obj = self._post(self._payload(text))
        return self._tokens(obj["tokens"], obj.get("count"))

    def encode_many(self, texts, allow_special):
        texts = list(texts)
        if len(texts) == 1:
            return [self.encode_one(texts[0], allow_special)]
        obj = self._post(self._payload(texts))
        tokens, counts = obj["tokens"], obj.get("count")
        if not isinstance(tokens, list) or len(tokens) != len(texts):
            got = len(tokens) if isinstance(tokens, list) else type(tokens).__name__
            raise EngineHTTPError(f"{self.url}: sent {len(texts)} prompts, 'tokens' has {got} entries")
        if not isinstance(counts, list) or len(counts) != len(texts):
            counts = [None] * len(texts)  # a scalar count for a list prompt is not per-prompt
        return [self._tokens(t, c) for t, c in zip(tokens, counts)]

    def identity(self) -> EngineIdentity:
        ident = super().identity()
        return EngineIdentity(
            spec=ident.spec, adapter=ident.adapter, package=self.api, package_version=None,
            vocab=ident.vocab, vocab_sha256=None, options=ident.options, fingerprint=ident.fingerprint,
        )

    def close(self) -> None:
        """Nothing to release: every request opens and closes its own connection."""


def _excerpt(body: bytes) -> str:
    text = body.decode("utf-8", errors="replace").strip()
    return repr(text if len(text) <= BODY_EXCERPT else text[:BODY_EXCERPT] + "...")


__all__ = ["EngineHTTPError", "HTTPEngine", "endpoint_url"]
