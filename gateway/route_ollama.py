"""Route mode in Ollama's native API: text lines as they come (NDJSON, a keep-alive is an empty
line of content), the tool calls in one ``tool_calls`` line when the turn ends (arguments as an
object, the call id alongside for clients that keep it), then the ``done`` line with the
member's counts, real durations and ``bench``."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from benchwarmers_mcp.context import Context
from benchwarmers_mcp.engine.route import RouteTurn
from benchwarmers_mcp.errors import BenchError
from benchwarmers_mcp.gateway import route_common
from benchwarmers_mcp.gateway.sse import ndjson
from benchwarmers_mcp.messages import Answer, Ask, ToolCall, Usage
from benchwarmers_mcp.store.collections import Collection

RespondRoute = Callable[[Context, Ask, dict[str, Any], Collection, Request], Any]


def _face() -> Any:
    """``ollama`` (its line shape and media type). It imports this module for its DIALECT, so it is
    imported here when first needed."""
    from benchwarmers_mcp.gateway import ollama

    return ollama


def _map_call(call: ToolCall, index: int) -> dict[str, Any]:
    return {"id": call.id, "function": {"index": index, "name": call.name,
                                        "arguments": route_common.arguments_object(call)}}


def _with_calls(line: dict[str, Any], answer: Answer) -> dict[str, Any]:
    if answer.tool_calls and isinstance(line.get("message"), dict):
        line["message"]["tool_calls"] = [_map_call(c, i) for i, c in enumerate(answer.tool_calls)]
    return line


def _done(turn: RouteTurn, ask: Ask, field: str, text: str, answer: Answer, started: float) -> dict[str, Any]:
    reason = "length" if answer.finish_reason == "length" else "stop"
    return _face().done_line(ask, field, text, answer.usage or Usage(), started, turn.bench(), reason)


async def stream_turn(turn: RouteTurn, ask: Ask, field: str, keepalive: float,
                      started: float) -> AsyncIterator[bytes]:
    relay = route_common.Relay(turn)
    try:
        async for piece in relay.text(keepalive):
            yield ndjson(_face().line(ask, field, piece or ""))
        answer = relay.answer
        if answer.tool_calls:
            yield ndjson(_with_calls(_face().line(ask, field, ""), answer))
        yield ndjson(_done(turn, ask, field, "", answer, started))
    except BenchError as e:
        yield ndjson({"error": e.message})


def responder(field: str) -> RespondRoute:
    """Route mode for ``/api/chat`` (``message``) or ``/api/generate`` (``response``)."""

    async def respond_route(ctx: Context, ask: Ask, body: dict[str, Any], collection: Collection,
                            request: Request) -> Response:
        started = time.monotonic()
        turn = await route_common.begin(ctx, ask, collection, request)
        if ask.stream:
            return route_common.streaming(turn, stream_turn(turn, ask, field, ctx.settings.keepalive, started),
                                          _face().NDJSON)
        answer = await turn.collect()
        return JSONResponse(_with_calls(_done(turn, ask, field, answer.text, answer, started), answer),
                            headers=route_common.headers(turn))

    return respond_route
