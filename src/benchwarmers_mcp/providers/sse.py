"""Reading server-sent events and NDJSON from an upstream response."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx

from benchwarmers_mcp.errors import UpstreamFailure


async def sse_events(response: httpx.Response) -> AsyncIterator[tuple[str | None, str]]:
    """Yield ``(event, data)`` pairs; comments are skipped, multi-line data joined."""
    event: str | None = None
    data: list[str] = []
    async for line in response.aiter_lines():
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
    async for line in response.aiter_lines():
        if line.strip():
            yield parse_json(line)
