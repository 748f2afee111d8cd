"""Ollama's native chat API: ``POST {base}/api/chat``, whole or streamed as NDJSON.

For a local runtime (``http://127.0.0.1:11434``; a base ending in ``/v1`` or ``/api`` is accepted
too). No key is needed locally; one is sent as a Bearer token when set (Ollama's cloud). Images
go as raw base64 in ``images`` (so only ``data:`` URLs: the gateway never fetches a link), tool
arguments are JSON objects, tool results are ``tool`` messages with ``tool_name``, and sampling
options go in ``options`` under Ollama's names (``max_tokens`` is ``num_predict``);
``reasoning_effort`` becomes ``think`` (false for "none" or "minimal").
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from benchwarmers_mcp.errors import UpstreamFailure
from benchwarmers_mcp.messages import (
    Answer,
    Finish,
    Message,
    ModelRequest,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from benchwarmers_mcp.providers.base import Connection, error_message, prefixed
from benchwarmers_mcp.providers.convert import (
    THINKING_BUDGETS,
    THINKING_OFF,
    arguments_object,
    arguments_text,
    call_id,
    option,
    options_as,
    reasoning_effort,
    split_data_url,
    stop_list,
    tool_names,
)
from benchwarmers_mcp.providers.http import collect, json_headers, open_stream, post_json
from benchwarmers_mcp.providers.sse import ndjson_lines

OPTIONS = (("temperature", "temperature"), ("top_p", "top_p"), ("top_k", "top_k"), ("seed", "seed"),
           ("presence_penalty", "presence_penalty"), ("frequency_penalty", "frequency_penalty"),
           ("num_ctx", "num_ctx"), ("max_tokens", "num_predict"))
FINISH = {"stop": "stop", "length": "length"}


def _map_message(message: Message, names: dict[str, str]) -> list[dict[str, Any]]:
    if message.tool_results:
        return [{"role": "tool", "content": r.content, "tool_name": r.name or names.get(r.call_id, "")}
                for r in message.tool_results]
    out: dict[str, Any] = {"role": "assistant" if message.role == "assistant" else "user", "content": message.text}
    images = []
    for image in message.images:
        inline = split_data_url(image.url)
        if inline is None:
            raise UpstreamFailure("Ollama's native API takes images only as data: URLs (base64); this request "
                                  f"links one ({image.placeholder()}), which the bench does not fetch")
        images.append(inline[1])
    if images:
        out["images"] = images
    if message.tool_calls:
        out["tool_calls"] = [{"function": {"name": c.name, "arguments": arguments_object(c.arguments)}}
                             for c in message.tool_calls]
    return [out]


def build_body(request: ModelRequest, *, stream: bool) -> dict[str, Any]:
    names = tool_names(request.messages)
    messages: list[dict[str, Any]] = [{"role": "system", "content": request.system}] if request.system else []
    for m in request.messages:
        messages.extend(_map_message(m, names))
    body: dict[str, Any] = {"model": request.model, "messages": messages, "stream": stream}
    options = options_as(request, OPTIONS)
    if stops := stop_list(option(request, "stop")):
        options["stop"] = stops
    if options:
        body["options"] = options
    effort = reasoning_effort(request)
    if effort in THINKING_OFF or effort in THINKING_BUDGETS:
        body["think"] = effort in THINKING_BUDGETS
    if request.tools and request.tool_choice != "none":
        body["tools"] = [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                           "parameters": t.parameters}} for t in request.tools]
    fmt = request.response_format or {}
    if fmt.get("type") == "json_object":
        body["format"] = "json"
    elif fmt.get("type") == "json_schema" and (fmt.get("json_schema") or {}).get("schema"):
        body["format"] = fmt["json_schema"]["schema"]
    return body


def _map_usage(data: dict[str, Any]) -> Usage | None:
    if data.get("prompt_eval_count") is None and data.get("eval_count") is None:
        return None
    return Usage(int(data.get("prompt_eval_count") or 0), int(data.get("eval_count") or 0))


def _map_message_out(message: dict[str, Any], first_tool: int) -> list[StreamEvent]:
    events: list[StreamEvent] = []
    if isinstance(message.get("thinking"), str) and message["thinking"]:
        events.append(ReasoningDelta(message["thinking"]))
    if isinstance(message.get("content"), str) and message["content"]:
        events.append(TextDelta(message["content"]))
    for i, call in enumerate(message.get("tool_calls") or []):
        fn = call.get("function") or {}
        events.append(ToolCallDelta(first_tool + i, call_id(call.get("id")), fn.get("name"),
                                    arguments_text(fn.get("arguments"))))
    return events


def _check(data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise UpstreamFailure("upstream sent something that is not an Ollama chat response")
    if data.get("error"):
        raise UpstreamFailure(prefixed("upstream error", error_message(data)))
    return data


class OllamaChat:
    def __init__(self, connection: Connection) -> None:
        self.conn = connection

    def _headers(self) -> dict[str, str]:
        return json_headers(self.conn, "Authorization", "Bearer ")

    @property
    def _url(self) -> str:
        base = self.conn.base_url.rstrip("/").removesuffix("/v1")
        return base + ("/chat" if base.endswith("/api") else "/api/chat")

    async def complete(self, request: ModelRequest) -> Answer:
        data, _ = await post_json(self.conn, self._url, build_body(request, stream=False), self._headers())
        data = _check(data)
        return collect(_map_message_out(data.get("message") or {}, 0),
                       Finish(FINISH.get(str(data.get("done_reason")), "stop"), _map_usage(data)))

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        finish, usage, tools = "stop", None, 0
        async with open_stream(self.conn, self._url, build_body(request, stream=True), self._headers()) as response:
            async for line in ndjson_lines(response):
                data = _check(line)
                events = _map_message_out(data.get("message") or {}, tools)
                tools += sum(1 for e in events if isinstance(e, ToolCallDelta))
                for event in events:
                    yield event
                if data.get("done"):
                    finish = FINISH.get(str(data.get("done_reason")), "stop")
                    usage = _map_usage(data)
                    break
        yield Finish(finish, usage)
