"""OpenAI Responses API: ``POST {base}/responses``, whole and streamed (typed SSE events), for
endpoints that speak only it. The base URL is the same ``.../v1`` root as chat completions.

Requests are stateless (``store: false``): the whole conversation goes in ``input`` every time,
system text as ``instructions``, tool calls and results as ``function_call`` /
``function_call_output`` items, tools flat (not nested under ``function``).
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
from benchwarmers_mcp.providers.base import error_for_status
from benchwarmers_mcp.providers.convert import option, options_as
from benchwarmers_mcp.providers.http import collect, open_stream, post_json
from benchwarmers_mcp.providers.openai import OpenAIPlatform
from benchwarmers_mcp.providers.sse import parse_json, sse_events

ERROR_STATUS = {"rate_limit_exceeded": 429, "insufficient_quota": 429, "invalid_prompt": 400,
                "invalid_request_error": 400, "server_error": 500, "model_not_found": 404}
CALL_ITEMS = ("function_call", "custom_tool_call")
PASSED = (("temperature", "temperature"), ("top_p", "top_p"), ("user", "user"), ("max_tokens", "max_output_tokens"))


def _map_message(message: Message) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = [{"type": "function_call_output", "call_id": r.call_id,
                                    "output": ("Error: " if r.is_error else "") + r.content}
                                   for r in message.tool_results]
    if message.role == "assistant":
        if message.text:
            items.append({"role": "assistant", "content": [{"type": "output_text", "text": message.text}]})
        for c in message.tool_calls:
            if c.kind == "custom":
                items.append({"type": "custom_tool_call", "call_id": c.id, "name": c.name, "input": c.arguments})
            else:
                items.append({"type": "function_call", "call_id": c.id, "name": c.name, "arguments": c.arguments})
        return items
    parts: list[dict[str, Any]] = []
    for p in message.parts:
        if isinstance(p, Text) and p.text:
            parts.append({"type": "input_text", "text": p.text})
        elif isinstance(p, Image):
            parts.append({"type": "input_image", "image_url": p.url, "detail": "auto"})
    if parts:
        items.append({"role": "user", "content": parts})
    return items


def _map_tool_choice(choice: Any) -> Any:
    if isinstance(choice, dict) and isinstance(choice.get("function"), dict):
        return {"type": "function", "name": choice["function"].get("name")}
    return choice


def build_body(request: ModelRequest, *, stream: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"model": request.model, "input": [i for m in request.messages for i in _map_message(m)],
                            "store": False}
    if request.system:
        body["instructions"] = request.system
    body.update(options_as(request, PASSED))
    if option(request, "reasoning_effort") is not None:
        body["reasoning"] = {"effort": option(request, "reasoning_effort")}
    if request.tools:
        body["tools"] = [{"type": "custom", "name": t.name, "description": t.description} if t.kind == "custom" else
                         {"type": "function", "name": t.name, "description": t.description,
                          "parameters": t.parameters} for t in request.tools]
        if request.tool_choice is not None:
            body["tool_choice"] = _map_tool_choice(request.tool_choice)
        if request.parallel_tool_calls is not None:
            body["parallel_tool_calls"] = request.parallel_tool_calls
    fmt = request.response_format or {}
    if fmt.get("type") == "json_schema":
        body["text"] = {"format": {"type": "json_schema", **(fmt.get("json_schema") or {})}}
    elif fmt.get("type") == "json_object":
        body["text"] = {"format": {"type": "json_object"}}
    if stream:
        body["stream"] = True
    return body


def _map_usage(data: Any) -> Usage | None:
    if not isinstance(data, dict):
        return None
    details = data.get("output_tokens_details") or {}
    return Usage(int(data.get("input_tokens") or 0), int(data.get("output_tokens") or 0),
                 int(details.get("reasoning_tokens") or 0))


def _map_finish(response: dict[str, Any]) -> str:
    if response.get("status") != "incomplete":
        return "stop"
    reason = (response.get("incomplete_details") or {}).get("reason")
    return "content_filter" if reason == "content_filter" else "length"


def _map_item(item: dict[str, Any], tool_index: int, *, whole: bool) -> list[StreamEvent]:
    """An output item: all of it (``whole``), or just what its opening event carries when streamed."""
    kind = item.get("type")
    if kind in CALL_ITEMS:
        body = (item.get("arguments") if kind == "function_call" else item.get("input")) or ""
        return [ToolCallDelta(tool_index, item.get("call_id") or item.get("id"), item.get("name"),
                              body if whole else "", "custom" if kind == "custom_tool_call" else "function")]
    if not whole:
        return []
    if kind == "message":
        return [TextDelta(c.get("text") or c.get("refusal") or "") for c in item.get("content") or []
                if c.get("type") in ("output_text", "refusal") and (c.get("text") or c.get("refusal"))]
    if kind == "reasoning":
        texts = [s.get("text") for s in (item.get("summary") or []) + (item.get("content") or []) if s.get("text")]
        return [ReasoningDelta("\n".join(texts))] if texts else []
    return []


def _raise(error: Any, headers: httpx.Headers) -> None:
    error = error if isinstance(error, dict) else {"message": str(error)}
    status = ERROR_STATUS.get(str(error.get("code") or error.get("type")), 500)
    raise error_for_status(status, headers, {"error": error})


class OpenAIResponses(OpenAIPlatform):
    PATH = "/responses"

    async def complete(self, request: ModelRequest) -> Answer:
        data, headers = await post_json(self.conn, self._url, build_body(request, stream=False), self._headers())
        if not isinstance(data, dict) or not isinstance(data.get("output"), list):
            raise UpstreamFailure("upstream answered with no output")
        if data.get("status") == "failed" or data.get("error"):
            _raise(data.get("error") or {"message": "the response failed"}, headers)
        events: list[StreamEvent] = []
        tools = 0
        for item in data["output"]:
            if isinstance(item, dict):
                events += _map_item(item, tools, whole=True)
                if item.get("type") in CALL_ITEMS:
                    tools += 1
        return collect(events, Finish(_map_finish(data), _map_usage(data.get("usage"))))

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        async with open_stream(self.conn, self._url, build_body(request, stream=True), self._headers()) as response:
            async for event in self._events(response):
                yield event

    async def _events(self, response: httpx.Response) -> AsyncIterator[StreamEvent]:
        tool_of: dict[int, int] = {}
        finish: Finish | None = None
        async for name, raw in sse_events(response):
            data = parse_json(raw)
            if not isinstance(data, dict):
                continue
            kind = data.get("type") or name
            index = int(data.get("output_index") or 0)
            if kind == "error":
                _raise(data, response.headers)
            elif kind == "response.failed":
                _raise((data.get("response") or {}).get("error") or {"message": "the response failed"},
                       response.headers)
            elif kind in ("response.output_text.delta", "response.refusal.delta") and data.get("delta"):
                yield TextDelta(data["delta"])
            elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta") and data.get(
                    "delta"):
                yield ReasoningDelta(data["delta"])
            elif kind == "response.output_item.added" and (data.get("item") or {}).get("type") in CALL_ITEMS:
                tool_of[index] = len(tool_of)
                for event in _map_item(data["item"], tool_of[index], whole=False):
                    yield event
            elif kind in ("response.function_call_arguments.delta", "response.custom_tool_call_input.delta") and (
                    index in tool_of and data.get("delta")):
                yield ToolCallDelta(tool_of[index], arguments=data["delta"])
            elif kind in ("response.completed", "response.incomplete"):
                done = data.get("response") or {}
                finish = Finish(_map_finish(done), _map_usage(done.get("usage")))
                break
        yield finish or Finish()
