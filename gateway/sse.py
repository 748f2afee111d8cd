"""Framing for streamed replies: SSE (with or without ``event:`` lines) and NDJSON."""

from __future__ import annotations

import json
from collections.abc import Callable
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


class Frame:
    """A frame made again and again with other values in the same places: a streamed reply's frame
    for each token. ``Frame(make, event, holes=n)(a, ...)`` is ``sse(make(a, ...), event)`` byte for
    byte, made from the frame's fixed parts and each value's JSON alone; the encoder had walked the
    whole frame again for every token of every answer. ``make`` must place each value once, as a
    value (never as a key, nor inside another string)."""

    def __init__(self, make: Callable[..., Any], event: str | None = None, holes: int = 1) -> None:
        marks = [f"\ue000hole {i}\ue000" for i in range(holes)]  # private-use characters: in no real frame
        rest = sse(make(*marks), event)
        self.parts: list[bytes] = []
        for mark in marks:
            head, found, rest = rest.partition(dumps(mark).encode())
            if not found or dumps(mark).encode() in rest:
                raise ValueError(f"a frame's value {mark!r} must appear exactly once")
            self.parts.append(head)
        self.parts.append(rest)

    def __call__(self, *values: Any) -> bytes:
        parts = self.parts
        if len(values) != len(parts) - 1:
            raise TypeError(f"this frame takes {len(parts) - 1} values, not {len(values)}")
        if len(values) == 1:  # a token's frame: 0.5 us, against 4.4 through the encoder
            return parts[0] + dumps(values[0]).encode() + parts[1]
        if len(values) == 2:
            return parts[0] + dumps(values[0]).encode() + parts[1] + dumps(values[1]).encode() + parts[2]
        out = [parts[0]]
        for value, part in zip(values, parts[1:], strict=True):
            out += (dumps(value).encode(), part)
        return b"".join(out)


def ndjson(data: Any) -> bytes:
    return (dumps(data) + "\n").encode()
