"""The one streamed response every face sends (``benchwarmers_mcp.streamed.Streamed``): the same
messages as Starlette's ``StreamingResponse``, a hang-up that stops the stream where it is and still
runs the close, and nothing left running once the stream is over."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from starlette.requests import ClientDisconnect
from starlette.responses import StreamingResponse

from benchwarmers_mcp.streamed import Streamed

pytestmark = pytest.mark.anyio

SCOPE: dict[str, Any] = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}}


async def pieces(log: list[str], pause: float = 0.0) -> AsyncIterator[bytes | str]:
    try:
        yield b"data: one\n\n"
        await asyncio.sleep(pause)
        yield "data: two\n\n"
        await asyncio.sleep(pause)
        yield b"data: three\n\n"
        log.append("ended")
    finally:
        log.append("closed")


async def never() -> dict[str, Any]:
    await asyncio.sleep(3600)
    return {"type": "http.disconnect"}


async def test_it_sends_what_starlettes_streaming_response_sends() -> None:
    headers = {"X-Bench-Conversation": "r1", "Cache-Control": "no-store"}
    theirs: list[dict[str, Any]] = []
    ours: list[dict[str, Any]] = []

    async def keep(into: list[dict[str, Any]], message: dict[str, Any]) -> None:
        into.append(message)

    await StreamingResponse(pieces([]), media_type="text/event-stream", headers=headers)(
        SCOPE, never, lambda m: keep(theirs, m))
    await Streamed(pieces([]), media_type="text/event-stream", headers=headers)(SCOPE, never, lambda m: keep(ours, m))
    assert ours == theirs
    assert [m.get("body") for m in ours[1:]] == [b"data: one\n\n", b"data: two\n\n", b"data: three\n\n", b""]


async def test_nothing_is_left_running_after_the_stream() -> None:
    before = set(asyncio.all_tasks())
    closed: list[str] = []

    async def on_close() -> None:
        closed.append("on_close")

    async def send(message: dict[str, Any]) -> None:
        pass

    await Streamed(pieces(closed), media_type="text/event-stream", on_close=on_close)(SCOPE, never, send)
    await asyncio.sleep(0)  # a cancelled task is done once it has run its cancellation
    assert set(asyncio.all_tasks()) == before, "the hang-up listener outlived its stream"
    assert closed == ["ended", "closed", "on_close"]


async def test_a_hang_up_stops_the_stream_where_it_is_and_still_closes() -> None:
    log: list[str] = []
    sent: list[bytes] = []
    gone = asyncio.Event()

    async def receive() -> dict[str, Any]:
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            sent.append(message["body"])
            gone.set()  # the caller hangs up after the first frame

    async def on_close() -> None:
        log.append("on_close")

    with anyio.fail_after(20):  # well inside the 30 s pause it must not wait out
        await Streamed(pieces(log, pause=30), media_type="text/event-stream", on_close=on_close)(SCOPE, receive, send)
    assert sent == [b"data: one\n\n"], "nothing more was sent after the hang-up"
    assert log == ["closed", "on_close"], "the pieces were stopped (not run to their end) and the close ran"


async def test_a_server_that_reports_hang_ups_as_failed_sends_needs_no_listener() -> None:
    scope = {**SCOPE, "asgi": {"version": "3.0", "spec_version": "2.4"}}
    log: list[str] = []
    received: list[str] = []

    async def receive() -> dict[str, Any]:
        received.append("receive")
        return await never()

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            raise OSError("the peer is gone")

    async def on_close() -> None:
        log.append("on_close")

    with pytest.raises(ClientDisconnect):
        await Streamed(pieces(log), media_type="text/event-stream", on_close=on_close)(scope, receive, send)
    await asyncio.sleep(0)
    assert received == [] and log == ["closed", "on_close"]
