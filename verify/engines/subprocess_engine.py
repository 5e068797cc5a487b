"""Adapter for an engine that runs as a separate process: ``subprocess:COMMAND``.

``COMMAND`` is split with :func:`shlex.split` and started once; the child then
serves every request of the run over a line-delimited JSON protocol on its
stdin/stdout (``verify-tokenize/1``, documented in docs/subprocess-protocol.md;
``verify.engines.protocol_server`` is the reference implementation)::

    subprocess:python -m verify.engines.protocol_server --engine tiktoken:cl100k_base
    subprocess:/opt/mytok/bin/tokserve --vocab cl100k.tiktoken?timeout=30

Everything after a ``?`` is adapter options (so the command itself cannot
contain ``?``; put such a command in a script, or in an engines/*.toml entry):

``timeout``         seconds to wait for one response (default 300)
``startup_timeout`` seconds to wait for the handshake (default 120)
``max_batch``       texts or samples per request (default 512)
``restart``         start a fresh child when the previous one died (default true);
                    the request that killed it still fails, so the harness's
                    one-sample-at-a-time retry pins a crash on its input
``max_restarts``    give up restarting after this many (default 20)

The adapter's capabilities are the ones the child declares in its handshake.
Entry points (``verify.engines.base``): the protocol's ``texts`` request is
``batch`` (up to ``max_batch`` texts per request); a child that declares segments
also has ``segments`` (the ``segments`` request, a batch of samples per request),
which is then the default for samples, as before (``?entry=batch`` sends every
sample segment by segment in ``texts`` requests instead).
Anything the child does wrong -- exits, writes a line that is not a protocol
message or one longer than ``MAX_ANSWER_LINE_BYTES`` (``verify.limits``), answers
with an id other than the request's (ids are drawn at random, so an answer cannot be
forged ahead of its request), writes a line when no request is outstanding (a
second answer), stays silent past the timeout -- raises
:class:`EngineProcessError` carrying the tail of the child's stderr; an error the
child reports for one request raises :class:`EngineRequestError` (a subclass)
with the child's own message. Either becomes an error finding in the harness.

The child leads a process group of its own (``verify.engines.child_process``): closing the
adapter, or giving up on a hung child, kills the group (the child and whatever it started),
and a watchdog kills it when the process that started the child goes without closing it.
"""

from __future__ import annotations

import base64
import json
import queue
import secrets
import shlex
import threading
from typing import Any, Sequence

import numpy as np

from verify.engines.base import Adapter, Capabilities, EngineIdentity, as_token_array
from verify.engines.child_process import EOF, ChildProcess, TooLong
from verify.errors import ConfigError
from verify.limits import MAX_ANSWER_LINE_BYTES
from verify.sample import Sample, Segment

PROTOCOL = "verify-tokenize/1"
PROTOCOL_FAMILY = "verify-tokenize/"
MAX_REQUEST_ID = 2**53  # ids stay exact in every JSON reader (JavaScript's numbers too)


class EngineProcessError(RuntimeError):
    """The engine process failed: it exited, broke the protocol, or timed out."""


class EngineRequestError(EngineProcessError):
    """The engine process answered a request with an error response."""

    def __init__(self, message: str, error_type: str = "Error"):
        super().__init__(message)
        self.error_type = error_type


def _capabilities_from(declared: Any) -> Capabilities:
    if not isinstance(declared, dict):
        raise ValueError("'capabilities' must be an object")
    flags: dict[str, Any] = {}
    for key in ("special_tokens", "segments", "decode"):
        value = declared.get(key, False)
        if not isinstance(value, bool):
            raise ValueError(f"capability '{key}' must be true or false, got {value!r}")
        flags[key] = value
    device = declared.get("device", "cpu")
    if device not in ("cpu", "gpu"):
        raise ValueError(f"capability 'device' must be \"cpu\" or \"gpu\", got {device!r}")
    unicode_version = declared.get("unicode_version")
    entry_points = ("batch", "segments") if flags["segments"] else ("batch",)
    return Capabilities(device=device, unicode_version=None if unicode_version is None else str(unicode_version),
                        entry_points=entry_points, **flags)


class SubprocessEngine(Adapter):
    adapter_name = "subprocess"
    package = None
    capabilities = Capabilities(special_tokens=False, segments=False, decode=False,
                                entry_points=("batch",))  # until the handshake

    def __init__(self, target, options=None, spec=None):
        super().__init__(target, options, spec)
        try:
            self.argv = shlex.split(target)
        except ValueError as exc:
            raise ConfigError(f"subprocess engine: cannot split command {target!r}: {exc}") from exc
        if not self.argv:
            raise ConfigError("subprocess engine spec names no command after 'subprocess:'")
        self.timeout = self._float_option("timeout", 300.0)
        self.startup_timeout = self._float_option("startup_timeout", 120.0)
        self.max_batch = max(1, int(self._float_option("max_batch", 512)))
        self.restart = bool(self.options.get("restart", True))
        self.max_restarts = int(self._float_option("max_restarts", 20, minimum=0))
        self.restarts = 0
        self._lock = threading.RLock()
        self._child: ChildProcess | None = None
        self._dead_reason: str | None = None
        self.handshake: dict[str, Any] = {}
        self._start()
        self.capabilities = _capabilities_from(self.handshake["capabilities"])
        self.vocab_name = self.handshake.get("vocab")
        self.vocab_sha256 = self.handshake.get("vocab_sha256")
        self.check_entry()

    def _float_option(self, name: str, default: float, minimum: float | None = None) -> float:
        raw = self.options.get(name, default)
        try:
            value = float(raw)
        except (TypeError, ValueError):
            raise ConfigError(f"subprocess engine option {name}={raw!r} is not a number") from None
        if (value < minimum) if minimum is not None else (value <= 0):
            raise ConfigError(f"subprocess engine option {name}={raw!r} is out of range")
        return value

    # --- process lifecycle --------------------------------------------------
    def _start(self) -> None:
        child = ChildProcess(self.argv)
        self._child = child
        self._dead_reason = None
        line = self._read_line(child, self.startup_timeout, "the handshake")
        try:
            msg = json.loads(line)
            if not isinstance(msg, dict):
                raise ValueError("not a JSON object")
            protocol = msg.get("protocol")
            if not isinstance(protocol, str) or not protocol.startswith(PROTOCOL_FAMILY):
                raise ValueError(f"'protocol' is {protocol!r}, expected {PROTOCOL!r}")
            if protocol != PROTOCOL:
                raise ValueError(f"speaks {protocol!r}; this harness speaks {PROTOCOL!r}")
            caps = _capabilities_from(msg.get("capabilities"))
        except (ValueError, RecursionError) as exc:
            self._fail(child, f"sent a bad handshake ({exc}): {_excerpt(line)}")
        if self.handshake and caps != _capabilities_from(self.handshake["capabilities"]):
            self._fail(child, "declared different capabilities after a restart")
        self.handshake = msg

    def _fail(self, child: ChildProcess, what: str):
        """Kill ``child``, remember why, and raise EngineProcessError with its stderr tail."""
        child.close(grace=0.5)
        status = child.proc.returncode
        message = f"engine process {shlex.join(self.argv)!r} {what}"
        if status is not None and "exited" not in what:
            message += f" (exit status {status})"
        tail = child.stderr_tail()
        message += f"\n--- stderr (last lines) ---\n{tail}" if tail else " (stderr was empty)"
        if self._child is child:
            self._child = None
            self._dead_reason = message
        raise EngineProcessError(message)

    def _read_line(self, child: ChildProcess, timeout: float, waiting_for: str) -> bytes:
        try:
            line = child.lines.get(timeout=timeout)
        except queue.Empty:
            self._fail(child, f"sent nothing for {timeout:g}s while the harness waited for {waiting_for}; killed it")
        if line is EOF:
            status = child.exit_status()
            how = "closed its stdout" if status is None else f"exited with status {status}"
            self._fail(child, f"{how} while the harness waited for {waiting_for}")
        if isinstance(line, TooLong):
            self._fail(child, f"wrote a line of {line.size:,} bytes, over the limit of {MAX_ANSWER_LINE_BYTES:,}, "
                              f"while the harness waited for {waiting_for}")
        return line

    def _unasked(self, child: ChildProcess) -> None:
        """A line waiting before a request is sent was asked for by nobody (a second answer to an
        earlier request): a protocol error, never taken as the answer to the next one."""
        try:
            line = child.lines.get_nowait()
        except queue.Empty:
            return
        if line is EOF:
            child.lines.put(EOF)  # the child is gone: the request says so
            return
        shown = f"a line of {line.size:,} bytes" if isinstance(line, TooLong) else _excerpt(line)
        self._fail(child, f"wrote a line when no request was outstanding (a second answer?): {shown}")

    def _live_child(self) -> ChildProcess:
        if self._child is not None:
            return self._child
        if not self.restart or self.restarts >= self.max_restarts:
            limit = "" if not self.restart else f" (restarted {self.restarts} times already)"
            raise EngineProcessError(f"engine process is not running{limit}; it failed earlier: {self._dead_reason}")
        self.restarts += 1
        self._start()
        assert self._child is not None
        return self._child

    def close(self) -> None:
        with self._lock:
            if self._child is not None:
                self._child.close()
                self._child = None
                self._dead_reason = "the adapter was closed"
                self.restart = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # --- requests -----------------------------------------------------------
    def _request(self, body: dict[str, Any], answer_key: str) -> list:
        with self._lock:
            child = self._live_child()
            self._unasked(child)
            rid = secrets.randbelow(MAX_REQUEST_ID)
            line = json.dumps({"id": rid, **body}, ensure_ascii=True, separators=(",", ":")).encode("ascii") + b"\n"
            try:
                child.send(line)
            except (BrokenPipeError, OSError, ValueError):
                status = child.exit_status()
                self._fail(child, "stopped reading its stdin" if status is None else f"exited with status {status}")
            reply = self._read_line(child, self.timeout, f"the answer to request {rid}")
            try:
                msg = json.loads(reply)
            except (ValueError, RecursionError):
                msg = None
            if not isinstance(msg, dict) or "id" not in msg:
                self._fail(child, f"wrote a line that is not a protocol message: {_excerpt(reply)}")
            if msg["id"] != rid:
                self._fail(child, f"answered request {msg['id']!r} when request {rid} was outstanding "
                                  "(a late or second answer?)")
            if "error" in msg:
                err = msg["error"] if isinstance(msg["error"], dict) else {"message": msg["error"]}
                etype, emsg = str(err.get("type", "Error")), str(err.get("message", ""))
                raise EngineRequestError(f"engine process reported {etype}: {emsg}", etype)
            result = msg.get(answer_key)
            if not isinstance(result, list):
                self._fail(child, f"answered request {rid} without a '{answer_key}' list: {_excerpt(reply)}")
            return result

    def _encode_request(self, body: dict[str, Any], count: int) -> list[np.ndarray]:
        result = self._request(body, "ids")
        if len(result) != count:
            raise EngineProcessError(f"engine process returned {len(result)} results for {count} inputs")
        try:
            return [as_token_array(ids) if isinstance(ids, list) else _not_a_list(ids) for ids in result]
        except ValueError as exc:
            raise EngineProcessError(f"engine process returned malformed token ids: {exc}") from exc

    def encode_many(self, texts, allow_special):
        out: list[np.ndarray] = []
        for start in range(0, len(texts), self.max_batch):
            chunk = list(texts[start:start + self.max_batch])
            out += self._encode_request({"texts": chunk, "allow_special": bool(allow_special)}, len(chunk))
        return out

    def encode_segments(self, segments: Sequence[Segment]) -> np.ndarray:
        return self._encode_samples([Sample("s", tuple(segments))])[0]

    def _encode_samples(self, samples: Sequence[Sample]) -> list[np.ndarray]:
        out: list[np.ndarray] = []
        for start in range(0, len(samples), self.max_batch):
            chunk = samples[start:start + self.max_batch]
            body = {"segments": [[[s.text, s.allow_special] for s in sample.segments] for sample in chunk]}
            out += self._encode_request(body, len(chunk))
        return out

    def encode_batch(self, samples: Sequence[Sample]) -> list[np.ndarray]:
        if self.capabilities.segments and self.entry != "batch":
            out = self._encode_samples(samples)  # one request per batch, not one per sample
            self.ran("segments", -(-len(samples) // self.max_batch), len(samples))
            return out
        return super().encode_batch(samples)

    def token_bytes(self, ids):
        if not self.capabilities.decode:
            raise EngineProcessError("engine process did not declare decode in its handshake")
        ids = [int(i) for i in np.asarray(ids).reshape(-1)]
        result = self._request({"token_bytes": ids}, "bytes")
        if len(result) != len(ids):
            raise EngineProcessError(f"engine process returned {len(result)} pieces for {len(ids)} tokens")
        try:
            return [base64.b64decode(piece, validate=True) for piece in result]
        except (TypeError, ValueError) as exc:
            raise EngineProcessError(f"engine process returned a piece that is not base64: {exc}") from exc

    def identity(self) -> EngineIdentity:
        ident = super().identity()
        name = self.handshake.get("name")
        version = self.handshake.get("version")
        return EngineIdentity(
            spec=ident.spec, adapter=ident.adapter,
            package=str(name) if name is not None else None,
            package_version=str(version) if version is not None else None,
            vocab=ident.vocab, vocab_sha256=ident.vocab_sha256,
            options=ident.options, fingerprint=ident.fingerprint,
        )


def _not_a_list(value):
    raise ValueError(f"expected a list of token ids, got {type(value).__name__}")


def _excerpt(line: bytes, limit: int = 200) -> str:
    text = line.decode("utf-8", errors="replace").rstrip("\r\n")
    return repr(text if len(text) <= limit else text[:limit] + "...")


__all__ = ["EngineProcessError", "EngineRequestError", "PROTOCOL", "SubprocessEngine"]
