"""Route mode in Anthropic Messages: the member's text as ``text`` blocks (streamed as it comes),
each tool call a ``tool_use`` block (streamed whole at the end: one ``input_json_delta``), the
member's usage, and ``bench`` on ``message_delta``. Reasoning is not relayed (an Anthropic
thinking block needs a signature only Anthropic can make)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from benchwarmers_mcp.context import Context
from benchwarmers_mcp.engine.route import RouteTurn
from benchwarmers_mcp.errors import BenchError
from benchwarmers_mcp.gateway import route_common
from benchwarmers_mcp.gateway.sse import SSE_HEADERS
from benchwarmers_mcp.messages import Answer, Ask, ToolCall, Usage
from benchwarmers_mcp.store.collections import Collection

STOP_REASONS = {"tool_calls": "tool_use", "length": "max_tokens", "stop": "end_turn"}


def _face() -> Any:
    """``anthropic`` (its events and error body). It imports this module for its DIALECT, so it is
    imported here when first needed."""
    from benchwarmers_mcp.gateway import anthropic

    return anthropic


def _map_stop(answer: Answer) -> str:
    if answer.tool_calls:
        return "tool_use"
    return STOP_REASONS.get(answer.finish_reason, "end_turn")


def _tool_use(call: ToolCall, with_input: bool = True) -> dict[str, Any]:
    return {"type": "tool_use", "id": call.id, "name": call.name,
            "input": route_common.arguments_object(call) if with_input else {}}


def message(turn: RouteTurn, ask: Ask, answer: Answer) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": answer.text}] if answer.text else []
    content += [_tool_use(c) for c in answer.tool_calls]
    if not content:
        content = [{"type": "text", "text": ""}]
    return _face().envelope(ask, content, _map_stop(answer), answer.usage or Usage(), bench=turn.bench())


async def stream_turn(turn: RouteTurn, ask: Ask, keepalive: float) -> AsyncIterator[bytes]:
    event = _face().event
    yield event("message_start", message=_face().envelope(ask, [], None, Usage()))
    relay = route_common.Relay(turn)
    index = 0
    text_open = False
    try:
        async for piece in relay.text(keepalive):
            if piece is None:
                yield event("ping")
                continue
            if not text_open:
                yield event("content_block_start", index=index, content_block={"type": "text", "text": ""})
                text_open = True
            yield event("content_block_delta", index=index, delta={"type": "text_delta", "text": piece})
        answer = relay.answer
        if text_open:
            yield event("content_block_stop", index=index)
            index += 1
        for call in answer.tool_calls:
            yield event("content_block_start", index=index, content_block=_tool_use(call, with_input=False))
            yield event("content_block_delta", index=index,
                        delta={"type": "input_json_delta", "partial_json": json.dumps(route_common.arguments_object(call))})
            yield event("content_block_stop", index=index)
            index += 1
        if index == 0:  # an empty answer is still one (empty) text block
            yield event("content_block_start", index=0, content_block={"type": "text", "text": ""})
            yield event("content_block_stop", index=0)
        usage = answer.usage or Usage()
        yield event("message_delta", delta={"stop_reason": _map_stop(answer), "stop_sequence": None},
                    usage={"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
                    bench=turn.bench())
        yield event("message_stop")
    except BenchError as e:
        yield event("error", error=_face().error_body(e)["error"])


async def respond_route(ctx: Context, ask: Ask, body: dict[str, Any], collection: Collection,
                        request: Request) -> Response:
    turn = await route_common.begin(ctx, ask, collection, request)
    if ask.stream:
        return route_common.streaming(turn, stream_turn(turn, ask, ctx.settings.keepalive), "text/event-stream",
                                      SSE_HEADERS)
    return JSONResponse(message(turn, ask, await turn.collect()), headers=route_common.headers(turn))
