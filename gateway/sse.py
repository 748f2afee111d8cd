"""Framing for streamed replies: SSE (with or without ``event:`` lines) and NDJSON."""

from __future__ import annotations

import json
from typing import Any

KEEPALIVE_COMMENT = b": keep-alive\n\n"
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


# one encoder for every frame: ``json.dumps`` with options builds a new one per call
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def dumps(data: Any) -> str:
    return _ENCODER.encode(data)


def sse(data: Any, event: str | None = None) -> bytes:
    payload = data if isinstance(data, str) else dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


def ndjson(data: Any) -> bytes:
    return (dumps(data) + "\n").encode()
