"""Reading server-sent events and NDJSON from an upstream response."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx

from benchwarmers_mcp.errors import UpstreamFailure


class _Lines:
    """A body's lines as its chunks come, split on LF, CRLF or a lone CR as SSE and NDJSON allow.
    Each chunk's whole lines are decoded as UTF-8 at once (a newline byte never falls inside a
    multi-byte character); what follows the last newline waits for the next chunk. Bytes rather
    than httpx's text and line decoders: those run per character in Python, and this is the part of
    every streamed call that grows with the answer."""

    def __init__(self) -> None:
        self.rest = b""
        self.cr = False  # the last chunk ended in CR: a LF opening the next one belongs to it

    def feed(self, chunk: bytes) -> list[str]:
        if self.cr and chunk[:1] == b"\n":
            chunk = chunk[1:]
        self.cr = chunk[-1:] == b"\r"
        rest = self.rest + chunk
        if b"\r" in rest:
            rest = rest.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        whole, newline, self.rest = rest.rpartition(b"\n")
        return whole.decode("utf-8", "replace").split("\n") if newline else []

    def end(self) -> list[str]:
        return [self.rest.decode("utf-8", "replace")] if self.rest else []


async def _lines(response: httpx.Response) -> AsyncIterator[str]:
    lines = _Lines()
    async for chunk in response.aiter_bytes():
        for line in lines.feed(chunk):
            yield line
    for line in lines.end():
        yield line


class _Events:
    """Server-sent events from their lines: ``line()`` returns an event when a blank line ends one."""

    def __init__(self) -> None:
        self.event: str | None = None
        self.data: list[str] = []

    def line(self, line: str) -> tuple[str | None, str] | None:
        if not line:
            done = (self.event, "\n".join(self.data)) if self.data else None
            self.event, self.data = None, []
            return done
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "event":
            self.event = value
        elif name == "data":
            self.data.append(value)
        return None


async def sse_events(response: httpx.Response) -> AsyncIterator[tuple[str | None, str]]:
    """Yield ``(event, data)`` pairs; comments are skipped, multi-line data joined. Lines are read
    from each chunk here, not through a generator of lines: an event is two lines, and each step
    through one more generator was paid for every event of every answer. A lone ``data:`` line and
    the blank line that ends its event, nearly every event an upstream streams, are taken in this
    loop; every other line goes to ``_Events.line``."""
    lines, events = _Lines(), _Events()
    async for chunk in response.aiter_bytes():
        for line in lines.feed(chunk):
            if not line:  # an event's end: yielded when it has data; its type is reset either way
                event_type, data = events.event, events.data
                events.event, events.data = None, []
                if data:
                    yield event_type, data[0] if len(data) == 1 else "\n".join(data)
            elif line.startswith("data:") and not events.data:
                events.data = [line[6:] if line[5:6] == " " else line[5:]]
            elif (event := events.line(line)) is not None:
                yield event
    for line in [*lines.end(), ""]:  # the body's end ends an event, as a blank line does
        if (event := events.line(line)) is not None:
            yield event


# the C scanner ``json.loads`` ends in: called alone it skips two whitespace regexes and three
# Python frames, 2.9 -> 1.7 us a stream chunk (a chunk per token)
_SCAN: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # set in __init__


def parse_json(data: str) -> Any:
    """``json.loads(data)``, the same values and the same refusals: what the scanner alone does not
    take whole (surrounding whitespace, anything malformed) goes to ``json.loads``."""
    try:
        value, end = _SCAN(data, 0)
        if end == len(data):
            return value
    except (StopIteration, ValueError):
        pass
    try:
        return json.loads(data)
    except ValueError as e:
        raise UpstreamFailure(f"upstream sent a malformed stream line: {data[:200]!r}") from e


async def ndjson_lines(response: httpx.Response) -> AsyncIterator[Any]:
    async for line in _lines(response):
        if line.strip():
            yield parse_json(line)
