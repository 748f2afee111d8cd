"""Retry advice on error replies for the SDKs that retry by themselves (openai, anthropic).

Both retry 408/409/429/5xx twice unless told ``x-should-retry: false``, and the anthropic SDK
sleeps for any ``retry-after`` however long. The gateway has already done what it can: a
panel asked again is a whole new panel, so only a short rate-limit wait is worth a retry.
"""

from __future__ import annotations

from benchwarmers_mcp.errors import BenchError

SHORT_WAIT = 30.0


def headers_for(error: BenchError) -> dict[str, str]:
    headers = dict(error.headers)
    wait = headers.get("Retry-After") or headers.get("retry-after")
    short = wait is not None and wait.isdigit() and int(wait) <= SHORT_WAIT
    if not (error.status == 429 and short):
        headers["x-should-retry"] = "false"
    return headers
