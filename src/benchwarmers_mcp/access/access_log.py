"""The access log: one line a request (on stderr when the server runs): method, path, status,
who, time taken.

It never holds a query string (a Gemini ``?key=`` lives there), a header, a body or a prompt.
Even the path is masked: anything shaped like a gateway key, and the admin token, are cut out,
and characters that could forge a log line are escaped. A health check that succeeds gets no
line: a container probes it every few seconds.
"""

from __future__ import annotations

import logging
import re
import sys
import time
from collections.abc import Iterable
from urllib.parse import quote

from benchwarmers_mcp.logformat import REQUEST, JsonLines

KEYISH = re.compile(r"bwk_[A-Za-z0-9_-]*")
PLAIN = re.compile(r"[!-~]*")  # printable ASCII, no space: a path kept as it is
MAX_PATH = 200
LOGGER = "benchwarmers.access"
# Answered without a line when they succeed (a refusal still gets one).
QUIET = frozenset({"/health"})


def to_stderr(log_format: str = "text") -> None:
    """Send the access log to stderr (the server command does this once at start), as text lines
    or JSON lines (``BENCH_LOG_FORMAT``)."""
    logger = logging.getLogger(LOGGER)
    if not any(getattr(h, "bench_access", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(JsonLines() if log_format == "json" else logging.Formatter("%(message)s"))
        handler.bench_access = log_format  # type: ignore[attr-defined]
        logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False


class AccessLog:
    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        self._secrets = sorted({s for s in secrets if s}, key=len, reverse=True)
        self._log = logging.getLogger(LOGGER)
        self._second, self._stamp = -1, ""

    def clean_path(self, path: str) -> str:
        for secret in self._secrets:
            path = path.replace(secret, "***")
        path = KEYISH.sub("bwk_***", path)
        if not PLAIN.fullmatch(path):
            path = "".join(c if c.isprintable() and not c.isspace() else quote(c, safe="") for c in path)
        return path if len(path) <= MAX_PATH else path[:MAX_PATH] + "..."

    def line(self, method: str, path: str, status: int, who: str, seconds: float) -> str:
        now = int(time.time())
        if now != self._second:  # one formatting a second, not one a request
            self._second, self._stamp = now, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))
        stamp = self._stamp
        verb = method if method.isalpha() and len(method) <= 10 else "?"
        return f"{stamp} {verb} {self.clean_path(path)} {status} {who} {seconds * 1000:.0f}ms"

    def write(self, method: str, path: str, status: int, who: str, seconds: float) -> None:
        if path in QUIET and status < 400:
            return  # a container's health check every few seconds would bury every other line
        if not self._log.isEnabledFor(logging.INFO):
            return
        handlers = self._log.handlers
        if len(handlers) == 1 and getattr(handlers[0], "bench_access", "") == "text" and not self._log.propagate:
            # the server's own stderr handler (``to_stderr``) and no other: the line as it would
            # print, without a log record, a caller lookup and a lock (a third of a request's logging)
            stream = handlers[0].stream  # type: ignore[attr-defined]
            try:
                stream.write(self.line(method, path, status, who, seconds) + "\n")
                stream.flush()
            except (OSError, ValueError):  # stderr closed or gone: the request goes on (logging's way)
                pass
            return
        verb, clean = method if method.isalpha() and len(method) <= 10 else "?", self.clean_path(path)
        self._log.info(self.line(method, path, status, who, seconds), extra={REQUEST: {
            "method": verb, "path": clean, "status": status, "who": who, "ms": round(seconds * 1000)}})
