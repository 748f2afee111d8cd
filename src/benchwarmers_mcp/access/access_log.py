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

KEYISH = re.compile(r"bwk_[A-Za-z0-9_-]*")
MAX_PATH = 200
LOGGER = "benchwarmers.access"
# Answered without a line when they succeed (a refusal still gets one).
QUIET = frozenset({"/health"})


def to_stderr() -> None:
    """Send the access log to stderr (the server command does this once at start)."""
    logger = logging.getLogger(LOGGER)
    if not any(getattr(h, "bench_access", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        handler.bench_access = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False


class AccessLog:
    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        self._secrets = sorted({s for s in secrets if s}, key=len, reverse=True)
        self._log = logging.getLogger(LOGGER)

    def clean_path(self, path: str) -> str:
        for secret in self._secrets:
            path = path.replace(secret, "***")
        path = KEYISH.sub("bwk_***", path)
        path = "".join(c if c.isprintable() and not c.isspace() else quote(c, safe="") for c in path)
        return path if len(path) <= MAX_PATH else path[:MAX_PATH] + "..."

    def line(self, method: str, path: str, status: int, who: str, seconds: float) -> str:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        verb = method if method.isalpha() and len(method) <= 10 else "?"
        return f"{stamp} {verb} {self.clean_path(path)} {status} {who} {seconds * 1000:.0f}ms"

    def write(self, method: str, path: str, status: int, who: str, seconds: float) -> None:
        if path in QUIET and status < 400:
            return  # a container's health check every few seconds would bury every other line
        if self._log.isEnabledFor(logging.INFO):
            self._log.info(self.line(method, path, status, who, seconds))
