"""Reading server-sent events and NDJSON from an upstream response."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx

from benchwarmers_mcp.errors import UpstreamFailure


async def _lines(response: httpx.Response) -> AsyncIterator[str]:
    """The body's lines, split on LF, CRLF or a lone CR as SSE and NDJSON allow, each decoded as
    UTF-8 once it is whole (a newline byte never falls inside a multi-byte character). Bytes
    rather than httpx's text and line decoders: those run per character in Python, and this is
    the part of every streamed call that grows with the answer."""
    rest = b""
    cr = False  # the last chunk ended in CR: a LF opening the next one belongs to it
    async for chunk in response.aiter_bytes():
        if cr and chunk[:1] == b"\n":
            chunk = chunk[1:]
        cr = chunk[-1:] == b"\r"
        rest += chunk
        if b"\r" in rest:
            rest = rest.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if b"\n" not in rest:
            continue
        *whole, rest = rest.split(b"\n")
        for line in whole:
            yield line.decode("utf-8", "replace")
    if rest:
        yield rest.decode("utf-8", "replace")


async def sse_events(response: httpx.Response) -> AsyncIterator[tuple[str | None, str]]:
    """Yield ``(event, data)`` pairs; comments are skipped, multi-line data joined."""
    event: str | None = None
    data: list[str] = []
    async for line in _lines(response):
        if not line:
            if data:
                yield event, "\n".join(data)
            event, data = None, []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
    if data:
        yield event, "\n".join(data)


def parse_json(data: str) -> Any:
    try:
        return json.loads(data)
    except ValueError as e:
        raise UpstreamFailure(f"upstream sent a malformed stream line: {data[:200]!r}") from e


async def ndjson_lines(response: httpx.Response) -> AsyncIterator[Any]:
    async for line in _lines(response):
        if line.strip():
            yield parse_json(line)
