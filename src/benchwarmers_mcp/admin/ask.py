"""``POST /api/ask``: ask a collection from the dashboard and hear each seat the moment it is done.

The body: ``{"collection", "prompt", "files": [{"name", "text"} | {"name", "image": "data:image/..."}],
"reply": "all" | "merged"}`` (reply left out: the collection's own; a route collection answers
as a panel here). Text files are added to the prompt under their names; images go as image parts.
Refusals (unknown collection, nobody seatable, ...) come before the stream, as a JSON error.

The reply is ``text/event-stream``: ``panel`` (id, shape, the seats to wait for, who was
skipped), then a ``seat`` for each seat in finish order (call id, seat, model, status, seconds,
answer, error), ``merged`` in merged mode, and ``done`` with the usage; comments keep it alive.
Each seat is in the store before its event is sent, and the panel goes on if the page is closed.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any, Literal

from pydantic import Field
from starlette.requests import Request
from starlette.responses import Response

from benchwarmers_mcp.admin.body import Strict, admin, body_as, ctx_of
from benchwarmers_mcp.engine.collections import reply_mode
from benchwarmers_mcp.engine.panel import MergeDone, PanelRun, SeatDone, start_panel
from benchwarmers_mcp.errors import BadRequest, BenchError
from benchwarmers_mcp.inbound import access_of
from benchwarmers_mcp.messages import Ask, Image, Message, Part, Text
from benchwarmers_mcp.store import collections as collection_store
from benchwarmers_mcp.store.calls import SeatRecord
from benchwarmers_mcp.streamed import Streamed

WHO = "dashboard"
IMAGE_URL = r"^data:image/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=]+$"


class FileIn(Strict):
    name: str = Field(min_length=1, max_length=200)
    text: str | None = Field(None, max_length=2_000_000)
    image: str | None = Field(None, max_length=15_000_000, pattern=IMAGE_URL)


class AskIn(Strict):
    collection: str = Field(min_length=1, max_length=80)
    prompt: str = Field(min_length=1, max_length=1_000_000)
    files: list[FileIn] = Field(default_factory=list, max_length=20)
    reply: Literal["all", "merged"] | None = None


def _map_parts(body: AskIn) -> tuple[Part, ...]:
    text = body.prompt.strip()
    images: list[Part] = []
    for f in body.files:
        if (f.text is None) == (f.image is None):
            raise BadRequest(f"file {f.name!r}: give exactly one of text or image")
        if f.text is not None:
            text += f"\n\n--- {f.name} ---\n{f.text}"
        else:
            assert f.image is not None
            images.append(Image(f.image))
    return (Text(text), *images)


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def _map_seat(run: PanelRun, seat: SeatRecord) -> dict[str, Any]:
    return {**seat.as_dict(), "key": seat.seat, "tokens_in": seat.tokens_in, "tokens_out": seat.tokens_out,
            "simulated": seat.alias in run.simulated}


def _opening(run: PanelRun) -> dict[str, Any]:
    return {"panel": run.id, "collection": run.collection.qualified, "shape": run.seating.shape,
            "shape_by": run.seating.shape_by, "reply": run.reply, "skipped": run.panel.skipped,
            "seats": [{"key": s.key, "seat": s.label, "alias": s.alias} for s in run.seating.seats]}


async def _stream(run: PanelRun, keepalive: float) -> AsyncIterator[bytes]:
    yield _sse("panel", _opening(run))
    try:
        async for event in run.events(keepalive):
            if event is None:
                yield b": keep-alive\n\n"
            elif isinstance(event, SeatDone):
                yield _sse("seat", _map_seat(run, event.record))
            elif isinstance(event, MergeDone):
                yield _sse("merged", {"answer": event.answer, "note": event.note,
                                      "merger": None if event.record is None else _map_seat(run, event.record)})
    except BenchError as e:
        yield _sse("error", {"message": e.message})
        return
    yield _sse("done", {"panel": run.id, "usage": {"input_tokens": run.usage.input_tokens,
                                                  "output_tokens": run.usage.output_tokens}})


@admin
async def ask(request: Request) -> Response:
    ctx, access = ctx_of(request), access_of(request)
    body = await body_as(request, AskIn, "ask")
    name = body.collection.strip().removeprefix("bench/")
    access.check(name)
    collection = await collection_store.resolve(ctx.db, name)
    question = Ask(collection=collection.name, messages=(Message("user", _map_parts(body)),), reply=body.reply,
                   stream=True, key_name=WHO, source=WHO)
    run = await start_panel(ctx, question, collection, reply_mode(question, collection, can_route=False),
                            access=access)
    return Streamed(_stream(run, ctx.settings.keepalive), media_type="text/event-stream",
                    headers={"Cache-Control": "no-store", "X-Bench-Panel": run.id,
                             "X-Accel-Buffering": "no"})
