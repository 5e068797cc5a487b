"""One HTTP POST with a deadline for the whole request and a limit on the answer's size.

A socket timeout bounds each read, not the request: a server that sends one byte a second
keeps every read short and the request alive for ever. Here a timer shuts the socket down
when the whole request (connect, send, headers, body) has taken ``deadline_s``: whatever read
was waiting returns at once, and the request is a ``RequestTimedOut``. The body is read in
chunks up to ``max_body`` bytes (a declared ``Content-Length`` above it is refused before
reading): a larger answer is ``AnswerTooLarge``, never held whole.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
from urllib.parse import urlsplit

CHUNK = 1 << 20


class TransportError(Exception):
    """The request could not be completed (unreachable, refused, cut off)."""


class RequestTimedOut(TransportError):
    pass


class AnswerTooLarge(TransportError):
    pass


def post(url: str, data: bytes, headers: dict[str, str], deadline_s: float,
         max_body: int) -> tuple[int, str, bytearray]:
    """``(status, reason, body)``; raises ``RequestTimedOut``, ``AnswerTooLarge`` or ``TransportError``."""
    parts = urlsplit(url)
    kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = kind(parts.hostname, parts.port, timeout=deadline_s)
    expired = threading.Event()

    def expire() -> None:
        expired.set()
        sock = conn.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    timer = threading.Timer(deadline_s, expire)
    timer.daemon = True
    timer.start()
    try:
        conn.request("POST", parts.path or "/", body=data, headers=headers)
        response = conn.getresponse()
        declared = response.getheader("Content-Length")
        if declared is not None and declared.strip().isdigit() and int(declared) > max_body:
            raise AnswerTooLarge(f"it announced a body of {int(declared):,} bytes, over the limit of {max_body:,}")
        body = bytearray()  # grown in place: one copy of the body at most, never a list and its join
        while True:
            chunk = response.read(CHUNK)
            if not chunk:
                break
            if len(body) + len(chunk) > max_body:
                body = chunk = None  # freed now: the exception's traceback keeps this frame alive a while
                raise AnswerTooLarge(f"its body passed the limit of {max_body:,} bytes")
            body += chunk
        if expired.is_set():  # the shutdown may look like the end of a body sent without a length
            raise RequestTimedOut(f"no complete answer within {deadline_s:g} s")
        return response.status, response.reason, body
    except AnswerTooLarge:
        raise
    except (OSError, http.client.HTTPException, ValueError) as exc:
        if expired.is_set():
            raise RequestTimedOut(f"no complete answer within {deadline_s:g} s") from None
        raise TransportError(f"{type(exc).__name__}: {exc}") from None
    finally:
        timer.cancel()
        conn.close()
