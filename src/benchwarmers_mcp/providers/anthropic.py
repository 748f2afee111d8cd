"""Anthropic Messages: ``POST {base}/v1/messages``, whole and streamed (named SSE events).

The key goes in ``x-api-key`` with ``anthropic-version`` (an endpoint's own headers may override
the version or add ``anthropic-beta``). The base URL is the API root (``https://api.anthropic.com``);
a base ending in ``/v1`` is accepted too. Tool arguments are JSON objects on this API and JSON
text in the bench, images are base64 or URL sources, tool results ride in the user's turn.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx

from benchwarmers_mcp.errors import UpstreamFailure
from benchwarmers_mcp.messages import (
    Answer,
    Finish,
    Image,
    Message,
    ModelRequest,
    ReasoningDelta,
    StreamEvent,
    Text,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from benchwarmers_mcp.providers.base import Connection, error_for_status
from benchwarmers_mcp.providers.convert import (
    THINKING_BUDGETS,
    arguments_object,
    arguments_text,
    forced_tool,
    option,
    options_as,
    reasoning_effort,
    split_data_url,
    stop_list,
)
from benchwarmers_mcp.providers.http import collect, json_headers, open_stream, post_json
from benchwarmers_mcp.providers.sse import parse_json, sse_events

VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096
SAMPLING = (("temperature", "temperature"), ("top_p", "top_p"), ("top_k", "top_k"))
STOP_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "pause_turn": "stop", "max_tokens": "length",
                "model_context_window_exceeded": "length", "tool_use": "tool_calls", "refusal": "content_filter"}
# An error event in a stream names its type, not a status: the status its HTTP twin would carry.
ERROR_STATUS = {"invalid_request_error": 400, "authentication_error": 401, "billing_error": 402,
                "permission_error": 403, "not_found_error": 404, "request_too_large": 413,
                "rate_limit_error": 429, "api_error": 500, "timeout_error": 504, "overloaded_error": 529}


def _map_image(image: Image) -> dict[str, Any]:
    inline = split_data_url(image.url)
    if inline:
        return {"type": "image", "source": {"type": "base64", "media_type": inline[0], "data": inline[1]}}
    return {"type": "image", "source": {"type": "url", "url": image.url}}


def _map_message(message: Message) -> dict[str, Any] | None:
    blocks: list[dict[str, Any]] = []
    for r in message.tool_results:
        blocks.append({"type": "tool_result", "tool_use_id": r.call_id, "content": r.content, "is_error": r.is_error})
    for p in message.parts:
        if isinstance(p, Text) and p.text:
            blocks.append({"type": "text", "text": p.text})
        elif isinstance(p, Image):
            blocks.append(_map_image(p))
    for c in message.tool_calls:
        blocks.append({"type": "tool_use", "id": c.id, "name": c.name, "input": arguments_object(c.arguments)})
    if not blocks:
        return None
    return {"role": "assistant" if message.role == "assistant" else "user", "content": blocks}


def _map_messages(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    """One turn per role change (tool results and the text after them share the user's turn)."""
    turns: list[dict[str, Any]] = []
    for message in messages:
        turn = _map_message(message)
        if turn is None:
            continue
        if turns and turns[-1]["role"] == turn["role"]:
            turns[-1]["content"].extend(turn["content"])
        else:
            turns.append(turn)
    return turns


def _map_tool_choice(choice: Any, parallel: bool | None) -> dict[str, Any] | None:
    mapped: dict[str, Any] | None = None
    if choice == "auto":
        mapped = {"type": "auto"}
    elif choice == "required":
        mapped = {"type": "any"}
    elif choice == "none":
        mapped = {"type": "none"}
    elif name := forced_tool(choice):
        mapped = {"type": "tool", "name": name}
    if parallel is False:
        mapped = {**(mapped or {"type": "auto"}), "disable_parallel_tool_use": True}
    return mapped


def _map_thinking(body: dict[str, Any], effort: str | None) -> None:
    """No ``thinking`` unless asked ("none"/"minimal" send nothing: Claude does not think by default).
    Asked for, a budget is set, ``max_tokens`` grows to hold it and the answer, and the sampling
    options thinking refuses (temperature, top_k) are left out."""
    budget = THINKING_BUDGETS.get(effort or "")
    if budget is None:
        return
    body["thinking"] = {"type": "enabled", "budget_tokens": budget}
    if body["max_tokens"] <= budget:
        body["max_tokens"] += budget
    body.pop("temperature", None)
    body.pop("top_k", None)


def build_body(request: ModelRequest, *, stream: bool) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": request.model,
        "max_tokens": option(request, "max_tokens", "max_completion_tokens") or DEFAULT_MAX_TOKENS,
        "messages": _map_messages(request.messages),
    }
    if request.system:
        body["system"] = request.system
    body.update(options_as(request, SAMPLING))
    _map_thinking(body, reasoning_effort(request))
    stops = stop_list(option(request, "stop"))
    if stops:
        body["stop_sequences"] = stops
    if request.tools:
        body["tools"] = [{"name": t.name, "description": t.description, "input_schema": t.parameters}
                         for t in request.tools]
        choice = _map_tool_choice(request.tool_choice, request.parallel_tool_calls)
        if choice:
            body["tool_choice"] = choice
    if stream:
        body["stream"] = True
    return body


def _map_usage(data: Any, output: int | None = None) -> Usage | None:
    if not isinstance(data, dict):
        return None
    prompt = sum(int(data.get(k) or 0) for k in ("input_tokens", "cache_creation_input_tokens",
                                                  "cache_read_input_tokens"))
    return Usage(prompt, int(data.get("output_tokens") or 0) if output is None else output)


def _map_stop(reason: Any) -> str:
    return STOP_REASONS.get(str(reason), "stop") if reason else "stop"


def _map_block(block: dict[str, Any], tool_index: int) -> list[StreamEvent]:
    """A whole content block, or the opening of a streamed one."""
    kind = block.get("type")
    if kind == "text" and block.get("text"):
        return [TextDelta(block["text"])]
    if kind == "thinking" and block.get("thinking"):
        return [ReasoningDelta(block["thinking"])]
    if kind == "tool_use":
        raw = block.get("input")
        arguments = arguments_text(raw) if raw else ""
        return [ToolCallDelta(tool_index, block.get("id"), block.get("name"), arguments)]
    return []


def _map_delta(delta: dict[str, Any], tool_index: int | None) -> list[StreamEvent]:
    kind = delta.get("type")
    if kind == "text_delta" and delta.get("text"):
        return [TextDelta(delta["text"])]
    if kind == "thinking_delta" and delta.get("thinking"):
        return [ReasoningDelta(delta["thinking"])]
    if kind == "input_json_delta" and tool_index is not None and delta.get("partial_json"):
        return [ToolCallDelta(tool_index, arguments=delta["partial_json"])]
    return []


def _raise_error_event(data: Any, headers: httpx.Headers) -> None:
    error = data.get("error") if isinstance(data, dict) else None
    kind = error.get("type") if isinstance(error, dict) else None
    raise error_for_status(ERROR_STATUS.get(str(kind), 500), headers, data)


class AnthropicMessages:
    def __init__(self, connection: Connection) -> None:
        self.conn = connection

    def _headers(self) -> dict[str, str]:
        return json_headers(self.conn, "x-api-key", fixed={"anthropic-version": VERSION})

    @property
    def _url(self) -> str:
        base = self.conn.base_url.rstrip("/")
        return base + ("/messages" if base.endswith("/v1") else "/v1/messages")

    async def complete(self, request: ModelRequest) -> Answer:
        data, headers = await post_json(self.conn, self._url, build_body(request, stream=False), self._headers())
        if not isinstance(data, dict) or data.get("type") == "error":
            _raise_error_event(data, headers)
        if not isinstance(data.get("content"), list):
            raise UpstreamFailure("upstream answered with no content")
        events: list[StreamEvent] = []
        tool_index = 0
        for block in (b for b in data["content"] if isinstance(b, dict)):
            events += _map_block(block, tool_index)
            if block.get("type") == "tool_use":
                tool_index += 1
        return collect(events, Finish(_map_stop(data.get("stop_reason")), _map_usage(data.get("usage"))))

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        async with open_stream(self.conn, self._url, build_body(request, stream=True), self._headers()) as response:
            async for event in self._events(response):
                yield event

    async def _events(self, response: httpx.Response) -> AsyncIterator[StreamEvent]:
        start_usage: Any = None
        output: int | None = None
        finish = "stop"
        tool_of: dict[int, int] = {}
        async for name, raw in sse_events(response):
            data = parse_json(raw)
            kind = data.get("type", name) if isinstance(data, dict) else name
            if kind == "error":
                _raise_error_event(data, response.headers)
            if not isinstance(data, dict):
                continue
            if kind == "message_start":
                start_usage = (data.get("message") or {}).get("usage")
            elif kind == "content_block_start":
                block, index = data.get("content_block") or {}, int(data.get("index", 0))
                if block.get("type") == "tool_use":
                    tool_of[index] = len(tool_of)
                for event in _map_block(block, tool_of.get(index, 0)):
                    yield event
            elif kind == "content_block_delta":
                for event in _map_delta(data.get("delta") or {}, tool_of.get(int(data.get("index", 0)))):
                    yield event
            elif kind == "message_delta":
                delta, usage = data.get("delta") or {}, data.get("usage") or {}
                if delta.get("stop_reason"):
                    finish = _map_stop(delta["stop_reason"])
                if "output_tokens" in usage:  # cumulative
                    output = int(usage["output_tokens"] or 0)
                if usage.get("input_tokens") is not None:
                    start_usage = {**(start_usage or {}), **usage}
            elif kind == "message_stop":
                break
        yield Finish(finish, _map_usage(start_usage or {}, output) if (start_usage or output is not None) else None)
