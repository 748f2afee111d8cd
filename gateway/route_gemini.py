"""Route mode in Gemini's API: text parts as they come, each tool call a ``functionCall`` part (with
the call id, which a client may echo in its ``functionResponse``) when the turn ends, then the
finish reason and the member's usage. Gemini's body has no room for ``bench``: the conversation,
member and call id go in headers (``X-Bench-Call`` when known before the reply is sent)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from benchwarmers_mcp.context import Context
from benchwarmers_mcp.engine.route import RouteTurn
from benchwarmers_mcp.errors import BenchError
from benchwarmers_mcp.gateway import route_common
from benchwarmers_mcp.gateway.sse import SSE_HEADERS
from benchwarmers_mcp.messages import Answer, Ask, Usage
from benchwarmers_mcp.store.collections import Collection

FINISH = {"length": "MAX_TOKENS", "content_filter": "SAFETY"}


def _face() -> Any:
    """``gemini`` (its response shape, framing and error body). It imports this module for its
    DIALECT, so it is imported here when first needed."""
    from benchwarmers_mcp.gateway import gemini

    return gemini


def _chunk(turn: RouteTurn, ask: Ask, parts: list[dict[str, Any]], answer: Answer | None = None) -> dict[str, Any]:
    response_id = turn.call or turn.conversation
    if answer is None:
        return _face().response(ask, response_id, parts)
    return _face().response(ask, response_id, parts, answer.usage or Usage(),
                            FINISH.get(answer.finish_reason, "STOP"))


def _calls(answer: Answer) -> list[dict[str, Any]]:
    return [{"functionCall": {"id": c.id, "name": c.name, "args": route_common.arguments_object(c)}}
            for c in answer.tool_calls]


def headers(turn: RouteTurn) -> dict[str, str]:
    out = route_common.headers(turn)
    if turn.call:
        out["X-Bench-Call"] = turn.call
    return out


async def chunks(turn: RouteTurn, ask: Ask, keepalive: float) -> AsyncIterator[dict[str, Any]]:
    """The stream's objects, framing aside: text (an empty one is a keep-alive), the calls, the
    finish; an error after the reply has started is the last one."""
    relay = route_common.Relay(turn)
    try:
        async for piece in relay.text(keepalive):
            yield _chunk(turn, ask, [{"text": piece or ""}])
        answer = relay.answer
        yield _chunk(turn, ask, _calls(answer) or [{"text": ""}], answer)
    except BenchError as e:
        yield _face().error_body(e)


async def respond_route(ctx: Context, ask: Ask, body: dict[str, Any], collection: Collection,
                        request: Request) -> Response:
    turn = await route_common.begin(ctx, ask, collection, request)
    if ask.stream:
        frames, media_type = _face().framed(body, chunks(turn, ask, ctx.settings.keepalive))
        return route_common.streaming(turn, frames, media_type, {**SSE_HEADERS, **headers(turn)})
    answer = await turn.collect()
    parts = ([{"text": answer.text}] if answer.text else []) + _calls(answer)
    return JSONResponse(_chunk(turn, ask, parts or [{"text": ""}], answer), headers=headers(turn))
