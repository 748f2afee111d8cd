"""Route mode in OpenAI chat completions: the member's answer under the collection's name, whole
or as chunks relayed as they come (text, reasoning and tool-call deltas), with ``bench`` on a last
chunk that has no choice."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from benchwarmers_mcp.context import Context
from benchwarmers_mcp.engine.route import RouteTurn
from benchwarmers_mcp.errors import BenchError
from benchwarmers_mcp.gateway import route_common
from benchwarmers_mcp.gateway.sse import KEEPALIVE_COMMENT, SSE_HEADERS, sse
from benchwarmers_mcp.messages import Answer, Ask, Finish, ReasoningDelta, TextDelta, ToolCallDelta, Usage
from benchwarmers_mcp.store.collections import Collection


def _chat() -> Any:
    """``openai_chat`` (its chunk writer and error body). It imports this module for its DIALECT,
    so it is imported here when first needed."""
    from benchwarmers_mcp.gateway import openai_chat

    return openai_chat


def _map_usage(usage: Usage | None) -> dict[str, Any]:
    u = usage or Usage()
    out: dict[str, Any] = _chat().usage_body(u)
    if u.reasoning_tokens:
        out["completion_tokens_details"] = {"reasoning_tokens": u.reasoning_tokens}
    return out


def _map_finish(reason: str | None, saw_tool_calls: bool) -> str:
    if saw_tool_calls and reason in (None, "stop"):
        return "tool_calls"
    return reason or "stop"


def _map_tool_delta(event: ToolCallDelta) -> dict[str, Any]:
    call: dict[str, Any] = {"index": event.index}
    function: dict[str, Any] = {}
    if event.id:
        call["id"], call["type"] = event.id, "function"
    if event.name:
        function["name"] = event.name
    function["arguments"] = event.arguments
    call["function"] = function
    return call


def completion(turn: RouteTurn, answer: Answer) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": answer.text or (None if answer.tool_calls else ""),
                               "refusal": None}
    if answer.reasoning:
        message["reasoning_content"] = answer.reasoning
    if answer.tool_calls:
        message["tool_calls"] = [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                                 for c in answer.tool_calls]
    return _chat().envelope(turn.collection.qualified, message,
                            _map_finish(answer.finish_reason, bool(answer.tool_calls)), _map_usage(answer.usage),
                            turn.bench())


async def stream_turn(turn: RouteTurn, keepalive: float, include_usage: bool) -> AsyncIterator[bytes]:
    out = _chat().ChunkWriter(turn.collection.qualified)
    yield out.chunk({"role": "assistant", "content": ""})
    finish: Finish | None = None
    saw_tools = False
    try:
        async for event in turn.events(keepalive):
            if event is None:
                yield KEEPALIVE_COMMENT
            elif isinstance(event, TextDelta) and event.text:
                yield out.chunk({"content": event.text})
            elif isinstance(event, ReasoningDelta) and event.text:
                yield out.chunk({"reasoning_content": event.text})
            elif isinstance(event, ToolCallDelta):
                saw_tools = True
                yield out.chunk({"tool_calls": [_map_tool_delta(event)]})
            elif isinstance(event, Finish):
                finish = event
        yield out.chunk({}, _map_finish(finish.reason if finish else None, saw_tools))
        usage = {"usage": _map_usage(turn.usage)} if include_usage else {}
        yield out.tail(**usage, bench=turn.bench())
    except BenchError as e:
        yield sse({"error": _chat().error_body(e)["error"]})
    yield b"data: [DONE]\n\n"


async def respond_route(ctx: Context, ask: Ask, body: dict[str, Any], collection: Collection,
                        request: Request) -> Response:
    turn = await route_common.begin(ctx, ask, collection, request)
    if ask.stream:
        opts = body.get("stream_options")
        include_usage = isinstance(opts, dict) and bool(opts.get("include_usage"))
        return route_common.streaming(turn, stream_turn(turn, ctx.settings.keepalive, include_usage),
                                      "text/event-stream", SSE_HEADERS)
    answer = await turn.collect()
    return JSONResponse(completion(turn, answer), headers=route_common.headers(turn))
