"""Server-sent events and NDJSON read from bytes, however the upstream's chunks fall."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from benchwarmers_mcp.errors import UpstreamFailure
from benchwarmers_mcp.providers.sse import ndjson_lines, parse_json, sse_events

pytestmark = pytest.mark.anyio

BODY = ("event: message_start\r\ndata: {\"a\": \"é€😀\"}\r\n\r\n"
        ": a comment\n\n"
        "event: ping\n\n"  # an event with no data: nothing, and its type does not carry over
        "data: after the ping\n\n"
        "data: one\ndata: two\n\n"
        "data:no space\r\rdata: lone CR ended\r\r"
        "event: last\ndata: without a blank line at the end").encode()

EVENTS = [("message_start", '{"a": "é€😀"}'), (None, "after the ping"), (None, "one\ntwo"), (None, "no space"), (None, "lone CR ended"),
          ("last", "without a blank line at the end")]


class _Chunks(httpx.AsyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk


def _response(chunks: list[bytes], content_type: str = "text/event-stream") -> httpx.Response:
    return httpx.Response(200, headers={"content-type": content_type}, stream=_Chunks(chunks))


async def _events(chunks: list[bytes]) -> list[tuple[str | None, str]]:
    return [e async for e in sse_events(_response(chunks))]


async def test_one_chunk() -> None:
    assert await _events([BODY]) == EVENTS


async def test_every_split_in_two_gives_the_same_events() -> None:
    for cut in range(1, len(BODY)):  # inside CRLF pairs and inside multi-byte characters too
        assert await _events([BODY[:cut], BODY[cut:]]) == EVENTS, cut


async def test_a_byte_at_a_time() -> None:
    assert await _events([BODY[i:i + 1] for i in range(len(BODY))]) == EVENTS


async def test_ndjson_lines_split_anywhere() -> None:
    body = b'{"n": 1}\r\n\n{"n": "\xc3\xa9"}\n{"n": 3}'
    for cut in range(1, len(body)):
        rows = [r async for r in ndjson_lines(_response([body[:cut], body[cut:]], "application/x-ndjson"))]
        assert rows == [{"n": 1}, {"n": "é"}, {"n": 3}], cut


@pytest.mark.parametrize("data", ['{"a": [1, 2.5, null, true]}', ' {"a": 1} ', '"\\ud800"', "NaN", "[]", "3",
                                  '{"a": 1}\n'])
def test_parse_json_reads_what_json_loads_reads(data: str) -> None:
    import json
    import math

    got, want = parse_json(data), json.loads(data)
    assert got == want or (isinstance(want, float) and math.isnan(want) and math.isnan(got))


@pytest.mark.parametrize("data", ["", " ", '{"a": 1} x', '{"a": ', "{'a': 1}", "[1,]"])
def test_parse_json_refuses_what_json_loads_refuses(data: str) -> None:
    with pytest.raises(UpstreamFailure, match="malformed stream line"):
        parse_json(data)
