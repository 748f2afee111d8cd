"""OpenAI chat completions: ``POST /v1/chat/completions``, a panel or a route turn, whole or streamed.

A panel is one ``chat.completion`` whose content is the panel's markdown, with ``bench`` beside
``choices``; streamed, the markdown in chunks and ``bench`` on the finishing chunk. A route turn is
the member's answer under the collection's name, whole or as chunks relayed as they come (text,
reasoning and tool-call deltas), with ``bench`` on a last chunk that has no choice. Errors take the
gateway's default shape (``inbound.error_body``).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import AsyncIterator
from functools import cached_property
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from benchwarmers_mcp.context import Context
from benchwarmers_mcp.engine import report
from benchwarmers_mcp.engine.panel import PanelRun
from benchwarmers_mcp.engine.route import RouteTurn
from benchwarmers_mcp.errors import BadRequest, BenchError, Unsupported
from benchwarmers_mcp.gateway import face, tool_defs
from benchwarmers_mcp.gateway.face import Dialect, handle_ask
from benchwarmers_mcp.gateway.images import parse_image_url
from benchwarmers_mcp.gateway.sse import KEEPALIVE_COMMENT, SSE_HEADERS, Frame, sse
from benchwarmers_mcp.gateway.tool_ids import function_calls
from benchwarmers_mcp.inbound import error_body, guarded
from benchwarmers_mcp.inbound import render_error as render_error  # this dialect's errors: the default shape
from benchwarmers_mcp.messages import (
    Answer,
    Ask,
    Finish,
    Message,
    Part,
    ReasoningDelta,
    Text,
    TextDelta,
    Tool,
    ToolCall,
    ToolCallDelta,
    ToolResult,
    Usage,
)
from benchwarmers_mcp.store.collections import Collection
from benchwarmers_mcp.streamed import Streamed

SAMPLING = ("temperature", "top_p", "max_tokens", "max_completion_tokens", "stop", "seed", "presence_penalty",
            "frequency_penalty", "n", "reasoning_effort", "logit_bias", "user")
HOSTED_TOOLS = ("web_search", "web_search_preview", "local_shell", "file_search", "code_interpreter",
                "computer_use_preview")


# ---- parse -------------------------------------------------------------------------------------

def _parse_parts(content: Any, where: str) -> list[Part]:
    if content is None:
        return []
    if isinstance(content, str):
        return [Text(content)]
    if not isinstance(content, list):
        raise BadRequest(f"{where}.content must be a string or a list of parts")
    parts: list[Part] = []
    for i, part in enumerate(content):
        if isinstance(part, str):
            parts.append(Text(part))
            continue
        if not isinstance(part, dict):
            raise BadRequest(f"{where}.content[{i}] must be an object")
        kind = part.get("type")
        if kind == "text":
            if not isinstance(part.get("text"), str):
                raise BadRequest(f"{where}.content[{i}].text must be a string")
            parts.append(Text(part["text"]))
        elif kind == "image_url":
            image = part.get("image_url")
            url = image.get("url") if isinstance(image, dict) else image
            parts.append(parse_image_url(url))
        elif kind in ("image", "input_image"):
            raise BadRequest(f"{where}.content[{i}]: use an image_url part on chat completions, not {kind!r}")
        elif kind in ("input_audio", "audio", "file", "input_file", "document"):
            raise Unsupported(f"{where}.content[{i}]: {kind} parts are not supported; send text or images")
        else:
            raise BadRequest(f"{where}.content[{i}]: unknown part type {kind!r}")
    return parts


def _parse_tool_calls(calls: Any, where: str) -> list[Part]:
    out: list[Part] = []
    for i, call, fn in function_calls(calls, where):
        args = fn.get("arguments", "{}")
        if not isinstance(args, str):
            raise BadRequest(f"{where}.tool_calls[{i}].function.arguments must be a JSON string")
        out.append(ToolCall(str(call.get("id") or f"call_{i}"), fn["name"], args or "{}"))
    return out


def parse_messages(raw: Any) -> tuple[str | None, tuple[Message, ...]]:
    if not isinstance(raw, list) or not raw:
        raise BadRequest("messages must be a non-empty list")
    system: list[str] = []
    messages: list[Message] = []
    for i, m in enumerate(raw):
        where = f"messages[{i}]"
        if not isinstance(m, dict):
            raise BadRequest(f"{where} must be an object")
        role = m.get("role")
        if role in ("system", "developer"):
            system.extend(p.text for p in _parse_parts(m.get("content"), where) if isinstance(p, Text))
        elif role == "user":
            content = m.get("content")
            messages.append(Message("user", (Text(content),) if isinstance(content, str) else
                                    tuple(_parse_parts(content, where))))
        elif role == "assistant":
            content = m.get("content")
            parts: list[Part] = [Text(content)] if isinstance(content, str) else [
                p for p in _parse_parts(content, where) if isinstance(p, Text)]
            if m.get("tool_calls") is not None:
                parts += _parse_tool_calls(m["tool_calls"], where)
            if m.get("function_call"):
                raise Unsupported(f"{where}: the legacy function_call field is not supported; use tool_calls")
            messages.append(Message("assistant", tuple(parts)))
        elif role == "tool":
            content = m.get("content")
            text = content if isinstance(content, str) else "".join(
                p.text for p in _parse_parts(content, where) if isinstance(p, Text))
            messages.append(Message("tool", (ToolResult(str(m.get("tool_call_id") or ""), text),)))
        elif role == "function":
            raise Unsupported(f"{where}: the legacy function role is not supported; use tool messages")
        else:
            raise BadRequest(f"{where}.role must be system, developer, user, assistant or tool")
    if not messages:
        raise BadRequest("messages has no user message")
    return ("\n\n".join(system) if system else None), tuple(messages)


def parse_tools(raw: Any) -> tuple[Tool, ...]:
    tools = []
    for i, t in tool_defs.objects(raw):
        if t.get("type") in HOSTED_TOOLS:
            raise Unsupported(f"tools[{i}]: the vendor-hosted tool {t['type']!r} is not supported")
        tools.append(tool_defs.function_tool(t.get("function") if t.get("type", "function") == "function" else None, i))
    return tuple(tools)


def parse(body: dict[str, Any], key_name: str = "local") -> Ask:
    collection, reply, nominees = face.named(body, body.get("model"))
    if body.get("functions") or body.get("function_call"):
        raise Unsupported("the legacy functions / function_call fields are not supported; use tools")
    system, messages = parse_messages(body.get("messages"))
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise BadRequest("stream must be true or false")
    options = {k: body[k] for k in SAMPLING if body.get(k) is not None}
    response_format = body.get("response_format")
    return Ask(
        collection=collection, messages=messages, system=system, reply=reply,
        with_=nominees, stream=stream, tools=parse_tools(body.get("tools")), tool_choice=body.get("tool_choice"),
        parallel_tool_calls=body.get("parallel_tool_calls") if isinstance(body.get("parallel_tool_calls"), bool) else None,
        response_format=response_format if isinstance(response_format, dict) else None,
        options=options, model_name=str(body.get("model")), key_name=key_name,
    )


# ---- render: shared by panels and route turns ---------------------------------------------------

def usage_body(u: Usage) -> dict[str, int]:
    """Token counts under chat completions' names (the legacy completions and route mode use them too)."""
    return {"prompt_tokens": u.input_tokens, "completion_tokens": u.output_tokens, "total_tokens": u.total}


def envelope(model: str, message: dict[str, Any], finish: str, usage: dict[str, Any],
             bench: dict[str, Any]) -> dict[str, Any]:
    """A whole ``chat.completion`` with one choice (panels and route turns alike)."""
    return {
        "id": f"chatcmpl-{secrets.token_hex(12)}", "object": "chat.completion", "created": int(time.time()),
        "model": model, "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": usage, "bench": bench,
    }


class ChunkWriter:
    def __init__(self, model: str) -> None:
        self.id = f"chatcmpl-{secrets.token_hex(12)}"
        self.created = int(time.time())
        self.model = model

    @cached_property
    def text(self) -> Frame:
        """A text chunk as ``chunk`` writes it, made a token at a time (built on a stream's first token)."""
        return Frame(lambda text: self._chunk_of({"content": text}))

    @cached_property
    def reasoning(self) -> Frame:
        return Frame(lambda text: self._chunk_of({"reasoning_content": text}))

    def _head(self) -> dict[str, Any]:
        return {"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model}

    def _chunk_of(self, delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
        return {**self._head(), "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
                **extra}

    def chunk(self, delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        return sse(self._chunk_of(delta, finish, **extra))

    def tail(self, **extra: Any) -> bytes:
        """A chunk with no choice, for what comes after the finish (usage, ``bench``)."""
        return sse({**self._head(), "choices": [], **extra})


def _include_usage(body: dict[str, Any]) -> bool:
    opts = body.get("stream_options")
    return isinstance(opts, dict) and bool(opts.get("include_usage"))


# ---- render: a panel ---------------------------------------------------------------------------

def completion(run: PanelRun) -> dict[str, Any]:
    message = {"role": "assistant", "content": report.content(run), "refusal": None}
    return envelope(run.collection.qualified, message, "stop", usage_body(run.usage), report.panel_bench(run))


async def stream_panel(run: PanelRun, keepalive: float, include_usage: bool) -> AsyncIterator[bytes]:
    out = ChunkWriter(run.collection.qualified)
    yield out.chunk({"role": "assistant", "content": ""})
    try:
        async for frame in face.framed(run, keepalive, lambda piece: out.chunk(
                {"content": piece}, bench_progress=report.progress_field(run)), []):
            yield frame
        yield out.chunk({}, "stop", bench=report.panel_bench(run))
        if include_usage:
            yield out.tail(usage=usage_body(run.usage))
    except Exception as e:
        yield sse({"error": error_body(face.as_bench_error(e))["error"]})
    yield b"data: [DONE]\n\n"


def respond(run: PanelRun, ask: Ask, body: dict[str, Any], ctx: Context, overhead_ms: float) -> Response:
    headers = face.reply_headers(run, overhead_ms)
    if ask.stream:
        return Streamed(stream_panel(run, ctx.settings.keepalive, _include_usage(body)),
                        media_type="text/event-stream", headers={**SSE_HEADERS, **headers})
    return JSONResponse(completion(run), headers=headers)


# ---- render: a route turn ----------------------------------------------------------------------

def _map_usage(usage: Usage | None) -> dict[str, Any]:
    u = usage or Usage()
    out: dict[str, Any] = usage_body(u)
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


def turn_completion(turn: RouteTurn, answer: Answer) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": answer.text or (None if answer.tool_calls else ""),
                               "refusal": None}
    if answer.reasoning:
        message["reasoning_content"] = answer.reasoning
    if answer.tool_calls:
        message["tool_calls"] = [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                                 for c in answer.tool_calls]
    return envelope(turn.collection.qualified, message, _map_finish(answer.finish_reason, bool(answer.tool_calls)),
                    _map_usage(answer.usage), report.turn_bench(turn))


async def stream_turn(turn: RouteTurn, keepalive: float, include_usage: bool) -> AsyncIterator[bytes]:
    out = ChunkWriter(turn.collection.qualified)
    yield out.chunk({"role": "assistant", "content": ""})
    finish: Finish | None = None
    saw_tools = False
    try:
        async for event in turn.events(keepalive):
            if event is None:
                yield KEEPALIVE_COMMENT
            elif isinstance(event, TextDelta) and event.text:
                yield out.text(event.text)
            elif isinstance(event, ReasoningDelta) and event.text:
                yield out.reasoning(event.text)
            elif isinstance(event, ToolCallDelta):
                saw_tools = True
                yield out.chunk({"tool_calls": [_map_tool_delta(event)]})
            elif isinstance(event, Finish):
                finish = event
        yield out.chunk({}, _map_finish(finish.reason if finish else None, saw_tools))
        usage = {"usage": _map_usage(turn.usage)} if include_usage else {}
        yield out.tail(**usage, bench=report.turn_bench(turn))
    except BenchError as e:
        yield sse({"error": error_body(e)["error"]})
    yield b"data: [DONE]\n\n"


async def respond_route(ctx: Context, ask: Ask, body: dict[str, Any], collection: Collection,
                        request: Request) -> Response:
    turn = await face.begin(ctx, ask, collection, request)
    if ask.stream:
        return face.streaming(turn, stream_turn(turn, ctx.settings.keepalive, _include_usage(body)),
                              "text/event-stream", SSE_HEADERS)
    answer = await turn.collect()
    return JSONResponse(turn_completion(turn, answer), headers=face.route_headers(turn))


DIALECT = Dialect("openai", parse, respond, render_error, respond_route)


@guarded(render_error)
async def chat_completions(request: Request) -> Response:
    return await handle_ask(request, DIALECT)
