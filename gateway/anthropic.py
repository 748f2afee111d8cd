"""Anthropic Messages: ``POST /v1/messages`` (whole and streamed) and
``POST /v1/messages/count_tokens``. The key may come as ``x-api-key`` or Bearer (SDK 2.x) and
either ``anthropic-version`` is accepted: the security layer judges keys, this face never does.

Every SSE event carries an ``event:`` line (the SDK drops events without one); keep-alives are
``ping`` events and ``message_delta`` carries ``usage`` (the SDK's helper needs it) and ``bench``.

A route turn is the member's text as ``text`` blocks (streamed as it comes), each tool call a
``tool_use`` block (streamed whole at the end: one ``input_json_delta``), the member's usage, and
``bench`` on ``message_delta``. Reasoning is not relayed (an Anthropic thinking block needs a
signature only Anthropic can make).

What a member gets of each content block type Anthropic documents is ``anthropic_blocks``' table
(a type it does not document is 400); a deferred tool (``defer_loading``) is offered once a
``tool_reference`` in the conversation names it, as Anthropic's own API does.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from benchwarmers_mcp.context import Context
from benchwarmers_mcp.engine import report
from benchwarmers_mcp.engine.panel import PanelRun
from benchwarmers_mcp.engine.route import RouteTurn
from benchwarmers_mcp.errors import BadRequest, BenchError, Unsupported
from benchwarmers_mcp.gateway import anthropic_blocks as blocks
from benchwarmers_mcp.gateway import face, options, retry, tool_defs
from benchwarmers_mcp.gateway.face import Dialect, handle_ask
from benchwarmers_mcp.gateway.sse import SSE_HEADERS, Frame, sse
from benchwarmers_mcp.gateway.tool_ids import arguments_text
from benchwarmers_mcp.inbound import context, guarded, key_name, read_json
from benchwarmers_mcp.messages import (
    Answer,
    Ask,
    Image,
    Message,
    Part,
    Text,
    Tool,
    ToolCall,
    ToolResult,
    Usage,
)
from benchwarmers_mcp.store.collections import Collection
from benchwarmers_mcp.streamed import Streamed

SAMPLING = {"max_tokens": "max_tokens", "temperature": "temperature", "top_p": "top_p", "stop_sequences": "stop"}
STOP_REASONS = {"tool_calls": "tool_use", "length": "max_tokens", "stop": "end_turn"}
ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
               404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 503: "overloaded_error"}


# ---- parse -------------------------------------------------------------------------------------

def _tool_result(block: dict[str, Any], where: str) -> tuple[ToolResult, list[Image]]:
    call_id = block.get("tool_use_id")
    if not isinstance(call_id, str) or not call_id:
        raise BadRequest(f"{where}.tool_use_id must be a string")
    texts, pictures = blocks.result_parts(block.get("content"), where)
    return ToolResult(call_id, "\n".join(texts), is_error=block.get("is_error") is True), pictures


def _user_turn(content: Any, where: str) -> list[Message]:
    """Tool results become tool messages; their images and the rest follow as one user message."""
    results: list[Message] = []
    parts: list[Part] = []
    for block_where, block in blocks.listed(content, where):
        if block["type"] == "tool_result":
            result, pictures = _tool_result(block, block_where)
            results.append(Message("tool", (result,)))
            parts.extend(pictures)
        elif block["type"] == "tool_use":
            raise BadRequest(f"{block_where}: tool_use blocks belong in assistant turns")
        else:
            parts.extend(blocks.parts_of(block, block_where))
    return results + ([Message("user", tuple(parts))] if parts else [])


def _assistant_turn(content: Any, where: str) -> Message:
    parts: list[Part] = []
    for block_where, block in blocks.listed(content, where):
        if block["type"] == "tool_use":
            if not isinstance(block.get("name"), str) or not isinstance(block.get("id"), str):
                raise BadRequest(f"{block_where} needs an id and a name")
            parts.append(ToolCall(block["id"], block["name"], arguments_text(block.get("input"), f"{block_where}.input")))
        elif block["type"] == "tool_result":
            raise BadRequest(f"{block_where}: tool_result blocks belong in user turns")
        else:
            for part in blocks.parts_of(block, block_where):
                if isinstance(part, Image):
                    raise BadRequest(f"{block_where}: an assistant turn cannot carry an image")
                parts.append(part)
    return Message("assistant", tuple(parts))


def parse_messages(raw: Any) -> tuple[Message, ...]:
    if not isinstance(raw, list) or not raw:
        raise BadRequest("messages must be a non-empty list")
    out: list[Message] = []
    for i, m in enumerate(raw):
        where = f"messages[{i}]"
        if not isinstance(m, dict):
            raise BadRequest(f"{where} must be an object")
        if m.get("role") == "system":
            continue  # a mid-conversation system turn (Claude Code sends them): see system_turns
        if m.get("role") == "user":
            out.extend(_user_turn(m.get("content"), where))
        elif m.get("role") == "assistant":
            out.append(_assistant_turn(m.get("content"), where))
        else:
            raise BadRequest(f"{where}.role must be user or assistant (the system prompt is the top-level system)")
    if not any(m.role in ("user", "tool") for m in out):
        raise BadRequest("messages has no user content")
    return tuple(out)


def parse_system(raw: Any) -> str | None:
    if raw is None or raw == "" or raw == []:
        return None
    if isinstance(raw, str):
        return raw
    if not isinstance(raw, list):
        raise BadRequest("system must be a string or a list of text blocks")
    texts = []
    for i, block in enumerate(raw):
        if not isinstance(block, dict) or block.get("type") != "text" or not isinstance(block.get("text"), str):
            raise BadRequest(f"system[{i}] must be a text block")
        texts.append(block["text"])
    return "\n\n".join(texts)


def system_turns(raw: Any) -> list[str]:
    """The text of mid-conversation ``system`` turns (Claude Code sends them); they join the system prompt."""
    texts: list[str] = []
    for i, m in enumerate(raw if isinstance(raw, list) else []):
        if isinstance(m, dict) and m.get("role") == "system":
            for where, block in blocks.listed(m.get("content"), f"messages[{i}]"):
                texts += [p.text for p in blocks.parts_of(block, where) if isinstance(p, Text)]
    return texts


def parse_tools(raw: Any, referenced: frozenset[str] = frozenset()) -> tuple[Tool, ...]:
    """The tools a member is offered: a deferred one (``defer_loading``) once ``referenced`` names it."""
    tools = []
    for i, t in tool_defs.objects(raw):
        kind = t.get("type", "custom")
        if kind != "custom":
            raise Unsupported(f"tools[{i}]: Anthropic's hosted tool {kind!r} is not supported; define your own tools")
        if not isinstance(t.get("name"), str) or not t["name"]:
            raise BadRequest(f"tools[{i}].name must be a string")
        if not blocks.deferred(t) or t["name"] in referenced:
            tools.append(tool_defs.tool(t["name"], t.get("description"), t.get("input_schema")))
    return tuple(tools)


def parse_tool_choice(raw: Any) -> tuple[Any, bool | None]:
    """Anthropic's tool_choice in OpenAI's terms, plus parallel_tool_calls."""
    if raw is None:
        return None, None
    if not isinstance(raw, dict) or raw.get("type") not in ("auto", "any", "none", "tool"):
        raise BadRequest("tool_choice must be {\"type\": \"auto\" | \"any\" | \"none\" | \"tool\"}")
    parallel = False if raw.get("disable_parallel_tool_use") is True else None
    kind = raw["type"]
    if kind == "tool":
        if not isinstance(raw.get("name"), str):
            raise BadRequest("tool_choice.name must be a string")
        return {"type": "function", "function": {"name": raw["name"]}}, parallel
    return {"auto": "auto", "any": "required", "none": "none"}[kind], parallel


def parse(body: dict[str, Any], key_name: str = "local") -> Ask:
    collection, reply, nominees = face.named(body, body.get("model"))
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise BadRequest("stream must be true or false")
    tool_choice, parallel = parse_tool_choice(body.get("tool_choice"))
    system = [t for t in (parse_system(body.get("system")), *system_turns(body.get("messages"))) if t]
    return Ask(
        collection=collection, messages=parse_messages(body.get("messages")), system="\n\n".join(system) or None,
        reply=reply, with_=nominees, stream=stream,
        tools=parse_tools(body.get("tools"), blocks.referenced(body.get("messages"))),
        tool_choice=tool_choice, parallel_tool_calls=parallel, options=options.pick(body, SAMPLING),
        model_name=str(body["model"]), key_name=key_name,
    )


# ---- render: shared by panels and route turns ---------------------------------------------------

def usage_body(u: Usage) -> dict[str, int]:
    """Token counts in Messages' shape (route mode uses it too); nothing is ever cached."""
    return {"input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
            "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}


def envelope(ask: Ask, content: list[dict[str, Any]], stop_reason: str | None, usage: Usage,
             **extra: Any) -> dict[str, Any]:
    """A Message (the whole reply, or empty in ``message_start``), panels and route turns alike."""
    return {"id": f"msg_{secrets.token_hex(12)}", "type": "message", "role": "assistant", "model": ask.model_name,
            "content": content, "stop_reason": stop_reason, "stop_sequence": None, "usage": usage_body(usage),
            **extra}


def _event_body(kind: str, **data: Any) -> dict[str, Any]:
    return {"type": kind, **data}


def event(kind: str, **data: Any) -> bytes:
    return sse(_event_body(kind, **data), event=kind)


def _delta_usage(usage: Usage) -> dict[str, int]:
    """``message_delta``'s usage: the two counts only."""
    return {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}


# ---- render: a panel ---------------------------------------------------------------------------

def message(run: PanelRun, ask: Ask) -> dict[str, Any]:
    text = report.content(run)
    return envelope(ask, [{"type": "text", "text": text}], "end_turn", face.panel_usage(run, ask, text),
                    bench=report.panel_bench(run))


def _text_delta_at(index: int) -> Frame:
    """The text delta of content block ``index``, made a token at a time (as ``event`` writes it)."""
    return Frame(lambda piece: _event_body("content_block_delta", index=index,
                                           delta={"type": "text_delta", "text": piece}), event="content_block_delta")


_text_delta = _text_delta_at(0)


async def stream_panel(run: PanelRun, ask: Ask, keepalive: float) -> AsyncIterator[bytes]:
    yield event("message_start", message=envelope(ask, [], None, Usage(face.count(ask), 0)))
    yield event("content_block_start", index=0, content_block={"type": "text", "text": ""})
    sent: list[str] = []
    try:
        async for frame in face.framed(run, keepalive, _text_delta, sent, idle=event("ping")):
            yield frame
        yield event("content_block_stop", index=0)
        usage = face.panel_usage(run, ask, "".join(sent))
        yield event("message_delta", delta={"stop_reason": "end_turn", "stop_sequence": None},
                    usage=_delta_usage(usage), bench=report.panel_bench(run))
        yield event("message_stop")
    except Exception as e:
        yield event("error", error=error_body(face.as_bench_error(e))["error"])


def respond(run: PanelRun, ask: Ask, body: dict[str, Any], ctx: Context, overhead_ms: float) -> Response:
    headers = face.reply_headers(run, overhead_ms)
    if ask.stream:
        return Streamed(stream_panel(run, ask, ctx.settings.keepalive), media_type="text/event-stream",
                        headers={**SSE_HEADERS, **headers})
    return JSONResponse(message(run, ask), headers=headers)


# ---- render: a route turn ----------------------------------------------------------------------

def _map_stop(answer: Answer) -> str:
    if answer.tool_calls:
        return "tool_use"
    return STOP_REASONS.get(answer.finish_reason, "end_turn")


def _tool_use(call: ToolCall, with_input: bool = True) -> dict[str, Any]:
    return {"type": "tool_use", "id": call.id, "name": call.name,
            "input": face.arguments_object(call) if with_input else {}}


def turn_message(turn: RouteTurn, ask: Ask, answer: Answer) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": answer.text}] if answer.text else []
    content += [_tool_use(c) for c in answer.tool_calls]
    if not content:
        content = [{"type": "text", "text": ""}]
    return envelope(ask, content, _map_stop(answer), answer.usage or Usage(), bench=report.turn_bench(turn))


def _tool_blocks(answer: Answer, index: int) -> list[bytes]:
    """Each tool call whole, from block ``index`` on: its start, its input in one delta, its stop."""
    frames = []
    for i, call in enumerate(answer.tool_calls, start=index):
        frames += [event("content_block_start", index=i, content_block=_tool_use(call, with_input=False)),
                   event("content_block_delta", index=i,
                         delta={"type": "input_json_delta", "partial_json": json.dumps(face.arguments_object(call))}),
                   event("content_block_stop", index=i)]
    return frames


async def stream_turn(turn: RouteTurn, ask: Ask, keepalive: float) -> AsyncIterator[bytes]:
    yield event("message_start", message=envelope(ask, [], None, Usage()))
    index = 0
    text_open = False
    try:
        async for piece in face.texts(turn, keepalive):
            if piece is None:
                yield event("ping")
                continue
            if not text_open:  # the answer's text is block 0: it opens before any tool block
                yield event("content_block_start", index=index, content_block={"type": "text", "text": ""})
                text_open = True
            yield _text_delta(piece)
        answer = turn.answer
        if text_open:
            yield event("content_block_stop", index=index)
            index += 1
        for frame in _tool_blocks(answer, index):
            yield frame
        if not text_open and not answer.tool_calls:  # an empty answer is still one (empty) text block
            yield event("content_block_start", index=0, content_block={"type": "text", "text": ""})
            yield event("content_block_stop", index=0)
        yield event("message_delta", delta={"stop_reason": _map_stop(answer), "stop_sequence": None},
                    usage=_delta_usage(answer.usage or Usage()), bench=report.turn_bench(turn))
        yield event("message_stop")
    except BenchError as e:
        yield event("error", error=error_body(e)["error"])


async def respond_route(ctx: Context, ask: Ask, body: dict[str, Any], collection: Collection,
                        request: Request) -> Response:
    turn = await face.begin(ctx, ask, collection, request)
    if ask.stream:
        return face.streaming(turn, stream_turn(turn, ask, ctx.settings.keepalive), "text/event-stream", SSE_HEADERS)
    return JSONResponse(turn_message(turn, ask, await turn.collect()), headers=face.route_headers(turn))


# ---- errors and handlers -----------------------------------------------------------------------

def error_body(error: BenchError) -> dict[str, Any]:
    return {"type": "error", "error": {"type": ERROR_TYPES.get(error.status, "api_error"), "message": error.message}}


def render_error(error: BenchError) -> Response:
    return JSONResponse(error_body(error), status_code=error.status, headers=retry.headers_for(error))


DIALECT = Dialect("anthropic", parse, respond, render_error, respond_route)


@guarded(render_error)
async def messages(request: Request) -> Response:
    return await handle_ask(request, DIALECT)


@guarded(render_error)
async def count_tokens(request: Request) -> Response:
    body = await read_json(request, context(request).settings.max_body)
    ask = parse({**body, "stream": False}, key_name(request))
    return JSONResponse({"input_tokens": await face.counted(request, ask)})
