"""Reference server for the ``verify-tokenize/1`` protocol (docs/subprocess-protocol.md).

Serves any engine the registry can build::

    python -m verify.engines.protocol_server --engine tiktoken:cl100k_base

and is what ``subprocess:`` talks to in the tests. It is also the example to
follow when writing a server in another language: print one handshake line,
then answer each request line with exactly one response line, in order; keep
stdout for the protocol and send logs to stderr; exit on EOF.
"""

from __future__ import annotations

import argparse
import base64
import json
import sys

import numpy as np

from verify.engines import build_engine
from verify.sample import Sample

PROTOCOL = "verify-tokenize/1"


def handle(engine, request: dict) -> dict:
    if "texts" in request:
        flag = bool(request.get("allow_special", False))
        samples = [Sample.from_segments(str(i), [(t, flag)]) for i, t in enumerate(request["texts"])]
    elif "segments" in request:
        samples = [Sample.from_segments(str(i), segs) for i, segs in enumerate(request["segments"])]
    elif "token_bytes" in request:
        pieces = engine.token_bytes(np.asarray(request["token_bytes"], dtype=np.uint32))
        return {"bytes": [base64.b64encode(p).decode("ascii") for p in pieces]}
    else:
        raise ValueError("request has none of 'texts', 'segments', 'token_bytes'")
    if not engine.capabilities.special_tokens and any(not s.is_plain for s in samples):
        raise ValueError("this engine cannot honour allow_special=true")
    return {"ids": [ids.tolist() for ids in engine.encode_batch(samples)]}


def serve(engine, stdin, stdout, segments: bool = True) -> None:
    def send(msg: dict) -> None:
        stdout.write(json.dumps(msg, ensure_ascii=True, separators=(",", ":")) + "\n")
        stdout.flush()

    ident = engine.identity()
    caps = engine.capabilities
    send({
        "protocol": PROTOCOL,
        "name": ident.package or ident.adapter,
        "version": ident.package_version,
        "vocab": ident.vocab,
        "vocab_sha256": ident.vocab_sha256,
        # encode_batch composes segments itself, so this server can always take them.
        "capabilities": {"special_tokens": caps.special_tokens, "segments": segments, "decode": caps.decode},
    })
    for line in stdin:
        request_id = None
        try:
            request = json.loads(line)
            request_id = request["id"]
            send({"id": request_id, **handle(engine, request)})
        except Exception as exc:  # one bad request must not end the session
            send({"id": request_id, "error": {"type": type(exc).__name__, "message": str(exc)}})


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", required=True, help="engine spec, e.g. tiktoken:cl100k_base")
    parser.add_argument("--no-segments", action="store_true", help="declare segments: false (clients send texts)")
    args = parser.parse_args(argv)
    protocol_out = sys.stdout
    sys.stdout = sys.stderr  # a stray print() from a library must not corrupt the protocol stream
    engine = build_engine(args.engine)
    serve(engine, sys.stdin, protocol_out, segments=not args.no_segments)


if __name__ == "__main__":
    main()
