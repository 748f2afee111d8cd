"""Route mode in OpenAI Responses: the member's text as a ``message`` item (streamed as it comes),
each tool call a ``function_call`` item, or a ``custom_tool_call`` (its one string ``input``) when
the request declared the tool as custom, as Codex does ``apply_patch``; ``bench`` rides on the
response and on ``response.completed``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from benchwarmers_mcp.context import Context
from benchwarmers_mcp.engine.route import RouteTurn
from benchwarmers_mcp.errors import BenchError
from benchwarmers_mcp.gateway import route_common
from benchwarmers_mcp.gateway.sse import KEEPALIVE_COMMENT, SSE_HEADERS
from benchwarmers_mcp.messages import Answer, Ask, ToolCall
from benchwarmers_mcp.store.collections import Collection


def _face() -> Any:
    """``responses`` (its envelope, events and error body). It imports this module for its DIALECT,
    so it is imported here when first needed."""
    from benchwarmers_mcp.gateway import responses

    return responses


def _custom_names(ask: Ask) -> set[str]:
    return {t.name for t in ask.tools if t.kind == "custom"}


def _map_call(call: ToolCall, custom: set[str], done: bool = True) -> dict[str, Any]:
    status = "completed" if done else "in_progress"
    if call.name in custom:
        given = route_common.arguments_object(call).get("input", "")
        return {"type": "custom_tool_call", "id": f"ctc_{call.id}", "call_id": call.id,
                "name": call.name, "input": (given if isinstance(given, str) else str(given)) if done else "",
                "status": status}
    return {"type": "function_call", "id": f"fc_{call.id}", "call_id": call.id, "name": call.name,
            "arguments": (call.arguments or "{}") if done else "", "status": status}


def _finish(answer: Answer) -> dict[str, Any]:
    if answer.finish_reason == "length":
        return {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}}
    return {"status": "completed"}


def _output(reply: Any, answer: Answer, custom: set[str]) -> list[dict[str, Any]]:
    items = [reply.item(answer.text)] if answer.text or not answer.tool_calls else []
    return items + [_map_call(c, custom) for c in answer.tool_calls]


def response(turn: RouteTurn, ask: Ask, body: dict[str, Any], answer: Answer) -> dict[str, Any]:
    reply = _face().Reply(ask, body)
    finish = _finish(answer)
    envelope = reply.envelope(finish.pop("status"), _output(reply, answer, _custom_names(ask)), answer.usage,
                              bench=turn.bench())
    return {**envelope, **finish}


def _tool_events(reply: Any, call: ToolCall, index: int, custom: set[str]) -> list[bytes]:
    """One tool call, whole: its item added, its arguments (or input) in one delta, done."""
    item = _map_call(call, custom, done=False)
    final = _map_call(call, custom)
    kind = "custom_tool_call_input" if item["type"] == "custom_tool_call" else "function_call_arguments"
    value = final["input"] if item["type"] == "custom_tool_call" else final["arguments"]
    ids = {"item_id": item["id"], "output_index": index}
    done_extra = {"input": value} if kind == "custom_tool_call_input" else {"arguments": value, "name": call.name}
    return [reply.event("response.output_item.added", output_index=index, item=item),
            reply.event(f"response.{kind}.delta", delta=value, **ids),
            reply.event(f"response.{kind}.done", **ids, **done_extra),
            reply.event("response.output_item.done", output_index=index, item=final)]


async def stream_turn(turn: RouteTurn, ask: Ask, body: dict[str, Any], keepalive: float) -> AsyncIterator[bytes]:
    reply = _face().Reply(ask, body)
    for frame in reply.started():
        yield frame
    relay, sent = route_common.Relay(turn), []
    try:
        async for piece in relay.text(keepalive):
            if piece is None:
                yield KEEPALIVE_COMMENT
                continue
            if not sent:
                for frame in reply.text_opened():
                    yield frame
            sent.append(piece)
            yield reply.text_delta(piece)
        answer, custom = relay.answer, _custom_names(ask)
        if sent:
            for frame in reply.text_closed("".join(sent)):
                yield frame
        for i, call in enumerate(answer.tool_calls, start=1 if sent else 0):
            for frame in _tool_events(reply, call, i, custom):
                yield frame
        finish = _finish(answer)
        final = {**reply.envelope(finish.pop("status"), _output(reply, answer, custom), answer.usage,
                                  bench=turn.bench()), **finish}
        yield reply.event("response.completed", response=final)
    except BenchError as e:
        for frame in reply.failed(e):
            yield frame


async def respond_route(ctx: Context, ask: Ask, body: dict[str, Any], collection: Collection,
                        request: Request) -> Response:
    turn = await route_common.begin(ctx, ask, collection, request)
    if ask.stream:
        return route_common.streaming(turn, stream_turn(turn, ask, body, ctx.settings.keepalive),
                                      "text/event-stream", SSE_HEADERS)
    return JSONResponse(response(turn, ask, body, await turn.collect()), headers=route_common.headers(turn))
