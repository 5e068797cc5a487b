"""Ray, reached from the driver: a bounded connect, and Ray's own messages kept off the terminal.

    import_ray       ``ray``, or the one-line install hint (exit 2) when the extra is missing.
    check_reachable  one line naming the address Ray would try, when nothing answers there.
    RayLog           Ray's own messages (its worker and node errors, its logger) in OUT/ray.log.
    native_stderr_to what Ray's C++ side writes to file descriptor 2 during ``ray.init``, into that log.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import sys
import tempfile

from verify.errors import VerifyError

RAY_MISSING = "verify run --executor ray needs ray: pip install 'verify-tokenizers[ray]'"
RAY_CONNECT_TIMEOUT_S = 10.0  # --ray-address: how long the cluster's address may take to answer
QUIET_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_BACKEND_LOG_LEVEL": "fatal"}


def import_ray():
    """``ray``, or the one-line install hint (exit 2)."""
    for name, value in QUIET_ENV.items():
        os.environ.setdefault(name, value)  # before ray starts: its processes inherit them
    try:
        import ray
    except ImportError:
        raise VerifyError(RAY_MISSING) from None
    return ray


def check_reachable(address: str, timeout_s: float = RAY_CONNECT_TIMEOUT_S) -> None:
    """One line (exit 2) naming the address Ray would try, when nothing answers there."""
    from ray._private.services import canonicalize_bootstrap_address

    try:
        tried = canonicalize_bootstrap_address(address.split("://")[-1]) or ""
    except Exception:  # Ray says what is wrong with the address itself
        return
    host, _, port = tried.rpartition(":")
    if not host or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as exc:
        hint = "" if tried == address else (
            f"; Ray connects to {tried} for {address} -- a cluster on the loopback address only is reached "
            "with RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0")
        raise VerifyError(f"--ray-address {address}: no Ray cluster answered at {tried} within {timeout_s:g} s "
                          f"({exc.strerror or type(exc).__name__}){hint}") from None


class RayLog:
    """Ray's own messages, appended to one file (made on first use; nowhere without a path).
    While installed, Ray's driver-side printer of worker and node errors and its ``ray``
    logger write here instead of the terminal."""

    def __init__(self, path: str | None):
        self.path, self._fh, self._saved = path, None, None

    def write(self, text: str) -> None:
        if self.path is None:
            return
        if self._fh is None:
            os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
            self._fh = open(self.path, "a", encoding="utf-8")
        self._fh.write(text.rstrip("\n") + "\n")
        self._fh.flush()

    def install(self, ray) -> None:
        worker = sys.modules.get("ray._private.worker")
        logger = logging.getLogger("ray")
        handler = logging.StreamHandler(self)  # this object is its stream
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        self._saved = (worker, getattr(worker, "print_to_stdstream", None), logger, logger.handlers[:],
                       logger.propagate)
        if self._saved[1] is not None:
            worker.print_to_stdstream = lambda data, ignore_prefix=False: self.write(
                "\n".join(f"({data.get('pid', 'ray')}) {line}" for line in data.get("lines", [])))
        logger.handlers, logger.propagate = [handler], False

    def flush(self) -> None:  # the logging handler's stream
        pass

    def close(self) -> None:
        if self._saved is not None:
            worker, printer, logger, handlers, propagate = self._saved
            if printer is not None:
                worker.print_to_stdstream = printer
            logger.handlers, logger.propagate = handlers, propagate
            self._saved = None
        if self._fh is not None:
            self._fh.close()
            self._fh = None


@contextlib.contextmanager
def native_stderr_to(log: RayLog):
    """Ray's C++ side writes to file descriptor 2 while ``ray.init`` runs: into the log."""
    with tempfile.TemporaryFile(mode="w+b") as capture:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(capture.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            capture.seek(0)
            text = capture.read().decode("utf-8", "replace").strip()
            if text:
                log.write(text)
