"""OpenAI-compatible chat completions: OpenAI, every hub's /v1, Ollama's /v1, LiteLLM, Open WebUI."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

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
from benchwarmers_mcp.providers.base import Connection, error_message, prefixed
from benchwarmers_mcp.providers.http import collect, json_headers, open_stream, post_json
from benchwarmers_mcp.providers.sse import parse_json, sse_events

DRAIN_SECONDS = 0.5  # reading what follows [DONE] (the body's end) waits at most this long
PASSED_OPTIONS = ("temperature", "top_p", "max_tokens", "max_completion_tokens", "stop", "seed",
                  "presence_penalty", "frequency_penalty", "logit_bias", "n", "user", "reasoning_effort",
                  "top_logprobs", "logprobs")


def _map_message(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool" or message.tool_results:
        return [
            {"role": "tool", "tool_call_id": r.call_id,
             "content": ("Error: " if r.is_error else "") + r.content}
            for r in message.tool_results
        ]
    if message.role == "assistant":
        out: dict[str, Any] = {"role": "assistant", "content": message.text or None}
        if message.tool_calls:
            out["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in message.tool_calls
            ]
        return [out]
    if not message.images:
        return [{"role": "user", "content": message.text}]
    parts: list[dict[str, Any]] = []
    for p in message.parts:
        if isinstance(p, Text):
            parts.append({"type": "text", "text": p.text})
        elif isinstance(p, Image):
            parts.append({"type": "image_url", "image_url": {"url": p.url}})
    return [{"role": "user", "content": parts}]


def build_body(request: ModelRequest, *, stream: bool) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    for m in request.messages:
        messages.extend(_map_message(m))
    body: dict[str, Any] = {"model": request.model, "messages": messages}
    for name in PASSED_OPTIONS:
        if name in request.options and request.options[name] is not None:
            body[name] = request.options[name]
    if request.tools:
        body["tools"] = [
            {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
            for t in request.tools
        ]
        if request.tool_choice is not None:
            body["tool_choice"] = request.tool_choice
        if request.parallel_tool_calls is not None:
            body["parallel_tool_calls"] = request.parallel_tool_calls
    if request.response_format is not None:
        body["response_format"] = request.response_format
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


def _map_usage(data: dict[str, Any] | None) -> Usage | None:
    if not isinstance(data, dict):
        return None
    details = data.get("completion_tokens_details") or {}
    return Usage(int(data.get("prompt_tokens") or 0), int(data.get("completion_tokens") or 0),
                 int(details.get("reasoning_tokens") or 0))


def _map_delta(delta: dict[str, Any]) -> list[StreamEvent]:
    if "tool_calls" not in delta and "reasoning_content" not in delta and "reasoning" not in delta:
        content = delta.get("content")  # a piece of text, nearly every chunk of an answer: taken here
        return [TextDelta(content)] if isinstance(content, str) and content else []
    events: list[StreamEvent] = []
    reasoning = delta.get("reasoning_content") or delta.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        events.append(ReasoningDelta(reasoning))
    content = delta.get("content")
    if isinstance(content, str) and content:
        events.append(TextDelta(content))
    for i, call in enumerate(delta.get("tool_calls") or []):
        fn = call.get("function") or {}
        events.append(ToolCallDelta(int(call.get("index", i)), call.get("id"), fn.get("name"),
                                    fn.get("arguments") or ""))
    return events


def _error_in_body(data: Any) -> None:
    if isinstance(data, dict) and data.get("error"):
        raise UpstreamFailure(prefixed("upstream error", error_message(data)))


class OpenAIPlatform:
    """How every OpenAI API is reached: ``{base}{PATH}`` on the ``.../v1`` root, with a Bearer key
    that wins over the endpoint's own headers."""

    PATH = ""

    def __init__(self, connection: Connection) -> None:
        self.conn = connection

    def _headers(self) -> dict[str, str]:
        return json_headers(self.conn, "Authorization", "Bearer ", key_wins=True)

    @property
    def _url(self) -> str:
        return self.conn.base_url.rstrip("/") + self.PATH


class OpenAIChat(OpenAIPlatform):
    PATH = "/chat/completions"

    async def complete(self, request: ModelRequest) -> Answer:
        data, _ = await post_json(self.conn, self._url, build_body(request, stream=False), self._headers())
        _error_in_body(data)
        choices = data.get("choices") if isinstance(data, dict) else None
        if not choices:
            raise UpstreamFailure("upstream answered with no choices")
        choice = choices[0] or {}
        return collect(_map_delta(choice.get("message") or {}),
                       Finish(choice.get("finish_reason") or "stop", _map_usage(data.get("usage"))))

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        finish, usage = "stop", None
        async with open_stream(self.conn, self._url, build_body(request, stream=True), self._headers()) as response:
            lines = sse_events(response)
            async for _event, data in lines:
                if data[:1] != "{" and data.strip() == "[DONE]":
                    # the body's end follows: read it, so the connection goes back to the pool
                    # (a stream left unread is closed, and the next call opens a new one)
                    with contextlib.suppress(TimeoutError):  # asyncio's own timeout: 3.9 us, anyio's 6.5
                        async with asyncio.timeout(DRAIN_SECONDS):
                            async for _ in lines:
                                pass
                    break
                chunk = parse_json(data)
                if not isinstance(chunk, dict):
                    continue
                if "error" in chunk:
                    _error_in_body(chunk)
                if "usage" in chunk:  # null on every chunk but the last, or absent
                    usage = _map_usage(chunk["usage"]) or usage
                for choice in chunk.get("choices") or []:
                    for event in _map_delta(choice.get("delta") or {}):
                        yield event
                    if choice.get("finish_reason"):
                        finish = choice["finish_reason"]
        yield Finish(finish, usage)
