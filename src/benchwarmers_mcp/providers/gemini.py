"""Gemini: ``POST {base}/models/{model}:generateContent`` and ``:streamGenerateContent?alt=sse``.

The key goes in ``x-goog-api-key``. The base URL is the versioned API root
(``https://generativelanguage.googleapis.com/v1beta``); a bare host gets ``/v1beta``. The system
text is ``systemInstruction``; roles are ``user`` and ``model``; images are ``inlineData`` (data
URLs) or ``fileData`` (links); tool calls are ``functionCall`` parts with JSON-object ``args``
(Gemini sends no call ids, so the bench makes them) and results are ``functionResponse`` parts,
matched to their call by name. JSON Schema parameters become Gemini's upper-case schema subset.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

import httpx

from benchwarmers_mcp.errors import UpstreamFailure
from benchwarmers_mcp.messages import (
    Answer,
    Finish,
    Image,
    Message,
    ModelRequest,
    Part,
    ReasoningDelta,
    StreamEvent,
    Text,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolResult,
    Usage,
)
from benchwarmers_mcp.providers.base import Connection, error_for_status
from benchwarmers_mcp.providers.convert import (
    THINKING_BUDGETS,
    THINKING_OFF,
    arguments_object,
    arguments_text,
    call_id,
    forced_tool,
    guess_media_type,
    option,
    options_as,
    reasoning_effort,
    split_data_url,
    stop_list,
    tool_names,
)
from benchwarmers_mcp.providers.http import collect, json_headers, open_stream, post_json
from benchwarmers_mcp.providers.sse import parse_json, sse_events

VERSIONED = re.compile(r"/v\d+(alpha|beta)?$")
FINISH = {"STOP": "stop", "MAX_TOKENS": "length", "SAFETY": "content_filter", "RECITATION": "content_filter",
          "BLOCKLIST": "content_filter", "PROHIBITED_CONTENT": "content_filter", "SPII": "content_filter"}
SCHEMA_KEYS = {"format", "description", "nullable", "enum", "required", "minItems", "maxItems", "minimum",
               "maximum", "title", "minLength", "maxLength", "pattern", "propertyOrdering"}
GENERATION = (("temperature", "temperature"), ("top_p", "topP"), ("top_k", "topK"), ("seed", "seed"),
              ("presence_penalty", "presencePenalty"), ("frequency_penalty", "frequencyPenalty"),
              ("max_tokens", "maxOutputTokens"))


def _map_schema(schema: Any) -> Any:
    """JSON Schema -> Gemini's schema: upper-case types, nullable for ``["x", "null"]``, known keys only."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type":
            types = value if isinstance(value, list) else [value]
            if "null" in types:
                out["nullable"] = True
            kept = [t for t in types if t != "null"]
            out["type"] = str(kept[0] if kept else "string").upper()
        elif key == "properties" and isinstance(value, dict):
            out[key] = {name: _map_schema(sub) for name, sub in value.items()}
        elif key == "items":
            out[key] = _map_schema(value)
        elif key == "anyOf" and isinstance(value, list):
            out[key] = [_map_schema(sub) for sub in value]
        elif key in SCHEMA_KEYS:
            out[key] = value
    return out


def _map_part(part: Part, names: dict[str, str]) -> dict[str, Any] | None:
    if isinstance(part, Text):
        return {"text": part.text} if part.text else None
    if isinstance(part, Image):
        inline = split_data_url(part.url)
        if inline:
            return {"inlineData": {"mimeType": inline[0], "data": inline[1]}}
        return {"fileData": {"mimeType": guess_media_type(part.url), "fileUri": part.url}}
    if isinstance(part, ToolCall):
        return {"functionCall": {"name": part.name, "args": arguments_object(part.arguments)}}
    if isinstance(part, ToolResult):
        try:
            value = json.loads(part.content)
        except ValueError:
            value = part.content
        response = value if isinstance(value, dict) else {"error" if part.is_error else "content": value}
        return {"functionResponse": {"name": part.name or names.get(part.call_id, "tool"), "response": response}}
    return None


def _map_contents(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    names = tool_names(messages)
    contents: list[dict[str, Any]] = []
    for message in messages:
        parts = [p for p in (_map_part(part, names) for part in message.parts) if p]
        if not parts:
            continue
        role = "model" if message.role == "assistant" else "user"
        if contents and contents[-1]["role"] == role:
            contents[-1]["parts"].extend(parts)
        else:
            contents.append({"role": role, "parts": parts})
    return contents


def _map_tool_config(choice: Any) -> dict[str, Any] | None:
    if choice in ("auto", "none"):
        return {"functionCallingConfig": {"mode": str(choice).upper()}}
    if choice == "required":
        return {"functionCallingConfig": {"mode": "ANY"}}
    if name := forced_tool(choice):
        return {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": [name]}}
    return None


def _map_generation(request: ModelRequest) -> dict[str, Any]:
    config = options_as(request, GENERATION)
    if stops := stop_list(option(request, "stop")):
        config["stopSequences"] = stops
    effort = reasoning_effort(request)
    if effort in THINKING_OFF:
        config["thinkingConfig"] = {"thinkingBudget": 0}
    elif effort in THINKING_BUDGETS:
        config["thinkingConfig"] = {"thinkingBudget": THINKING_BUDGETS[effort], "includeThoughts": True}
    fmt = request.response_format or {}
    if fmt.get("type") in ("json_object", "json_schema"):
        config["responseMimeType"] = "application/json"
        schema = (fmt.get("json_schema") or {}).get("schema")
        if schema:
            config["responseSchema"] = _map_schema(schema)
    return config


def build_body(request: ModelRequest) -> dict[str, Any]:
    body: dict[str, Any] = {"contents": _map_contents(request.messages)}
    if request.system:
        body["systemInstruction"] = {"parts": [{"text": request.system}]}
    if request.tools:
        declarations = []
        for t in request.tools:
            declaration: dict[str, Any] = {"name": t.name, "description": t.description}
            if (t.parameters or {}).get("properties"):
                declaration["parameters"] = _map_schema(t.parameters)
            declarations.append(declaration)
        body["tools"] = [{"functionDeclarations": declarations}]
        if config := _map_tool_config(request.tool_choice):
            body["toolConfig"] = config
    if generation := _map_generation(request):
        body["generationConfig"] = generation
    return body


def _map_usage(data: Any) -> Usage | None:
    if not isinstance(data, dict):
        return None
    thoughts = int(data.get("thoughtsTokenCount") or 0)
    return Usage(int(data.get("promptTokenCount") or 0), int(data.get("candidatesTokenCount") or 0) + thoughts,
                 thoughts)


def _map_finish(reason: Any) -> str | None:
    return FINISH.get(str(reason), "stop") if reason else None


def _map_parts(parts: list[Any], first_tool: int) -> list[StreamEvent]:
    events: list[StreamEvent] = []
    tool = first_tool
    for part in parts:
        if not isinstance(part, dict):
            continue
        if isinstance(part.get("text"), str) and part["text"]:
            events.append(ReasoningDelta(part["text"]) if part.get("thought") else TextDelta(part["text"]))
        call = part.get("functionCall")
        if isinstance(call, dict):
            events.append(ToolCallDelta(tool, call_id(call.get("id")), call.get("name"),
                                        arguments_text(call.get("args"))))
            tool += 1
    return events


def _check(data: Any, headers: httpx.Headers) -> dict[str, Any]:
    """A chunk or answer, or the error it carries raised (a stream's error has no HTTP status of its own)."""
    if isinstance(data, list) and len(data) == 1:
        data = data[0]
    if not isinstance(data, dict):
        raise UpstreamFailure("upstream sent something that is not a Gemini response")
    error = data.get("error")
    if isinstance(error, dict):
        code = error.get("code")
        status = code if isinstance(code, int) else 500
        raise error_for_status(status, headers, data)
    return data


class GeminiGenerate:
    def __init__(self, connection: Connection) -> None:
        self.conn = connection

    def _headers(self) -> dict[str, str]:
        return json_headers(self.conn, "x-goog-api-key")

    def _url(self, model: str, method: str) -> str:
        base = self.conn.base_url.rstrip("/")
        if not VERSIONED.search(base):
            base += "/v1beta"
        name = model.removeprefix("models/")
        return f"{base}/models/{quote(name, safe='-._~@')}:{method}"

    async def complete(self, request: ModelRequest) -> Answer:
        data, headers = await post_json(self.conn, self._url(request.model, "generateContent"), build_body(request),
                                        self._headers())
        data = _check(data, headers)
        finish = "stop"
        candidates = data.get("candidates") or []
        if not candidates and (data.get("promptFeedback") or {}).get("blockReason"):
            finish = "content_filter"
        events: list[StreamEvent] = []
        for candidate in candidates[:1]:
            events += _map_parts((candidate.get("content") or {}).get("parts") or [], 0)
            finish = _map_finish(candidate.get("finishReason")) or finish
        return collect(events, Finish(finish, _map_usage(data.get("usageMetadata"))))

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        finish, usage, tools = "stop", None, 0
        url = self._url(request.model, "streamGenerateContent") + "?alt=sse"
        async with open_stream(self.conn, url, build_body(request), self._headers()) as response:
            async for _event, raw in sse_events(response):
                data = _check(parse_json(raw), response.headers)
                usage = _map_usage(data.get("usageMetadata")) or usage
                for candidate in (data.get("candidates") or [])[:1]:
                    events = _map_parts((candidate.get("content") or {}).get("parts") or [], tools)
                    tools += sum(1 for e in events if isinstance(e, ToolCallDelta))
                    for event in events:
                        yield event
                    finish = _map_finish(candidate.get("finishReason")) or finish
        yield Finish(finish, usage)
