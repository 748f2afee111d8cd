"""``GET /api/events``: what happens on the bench, pushed as server-sent events.

Each event is one row of the store's ``events`` table (a seat, panel, verdict, change, alert or
route turn, whichever process on the data folder wrote it): ``id: <n>``, ``event: <kind>``,
``data: {"id", "at", "kind", "subject", "ref"}``. The stream opens with ``ready`` (its id is the
newest event, so a browser always has a ``Last-Event-ID`` to resume from) and resumes after
``Last-Event-ID`` or ``?after=<id>``, replayed from the table. ``reset`` means too much was
missed to replay: reload. A stream lasts ``LIFETIME`` seconds and asks the browser to come back
after ``RETRY_MS``, so no event is lost in between. A server that is stopping ends every stream at
once with ``closing`` (``app.closing``): it never waits on an open dashboard.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import anyio
from starlette.requests import Request
from starlette.responses import Response

from benchwarmers_mcp.admin.body import admin, ctx_of
from benchwarmers_mcp.errors import BadRequest, BenchError
from benchwarmers_mcp.store.events import Event, Feed
from benchwarmers_mcp.streamed import Streamed

LIFETIME = 15.0
RETRY_MS = 500
KEEPALIVE = 10.0


def _frame(event: Event) -> bytes:
    data = json.dumps(event.as_dict(), separators=(",", ":"))
    return f"id: {event.id}\nevent: {event.kind}\ndata: {data}\n\n".encode()


def since_of(request: Request) -> int | None:
    raw = (request.headers.get("last-event-id") or request.query_params.get("after") or "").strip()
    if not raw:
        return None
    if not raw.isdigit() or len(raw) > 18:
        raise BadRequest("Last-Event-ID (or ?after=) is an event id: a whole number")
    return int(raw)


def feed_of(request: Request) -> Feed:
    feed = ctx_of(request).events
    if feed is None:
        raise BenchError("the event feed is not running on this server")
    return feed


async def _stream(feed: Feed, since: int | None) -> AsyncIterator[bytes]:
    async with feed.subscribe(since) as sub:
        yield f"retry: {RETRY_MS}\nid: {sub.cursor}\nevent: {'reset' if sub.reset else 'ready'}\ndata: {{}}\n\n".encode()
        with anyio.move_on_after(LIFETIME):
            while True:
                batch = await sub.next(KEEPALIVE)
                if batch is None:  # dropped for falling behind, or the server is stopping
                    if feed.closed:
                        yield b"event: closing\ndata: {}\n\n"
                    return
                if not batch:
                    yield b": keep-alive\n\n"
                for event in batch:
                    yield _frame(event)


@admin
async def stream(request: Request) -> Response:
    feed = feed_of(request)
    return Streamed(_stream(feed, since_of(request)), media_type="text/event-stream",
                    headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})
