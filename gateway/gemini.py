"""Gemini: ``POST /{v1beta,v1}/models/<collection>:generateContent``, ``:streamGenerateContent``
(SSE with ``alt=sse``, else one JSON array sent as it grows) and ``:countTokens``.

Field names come in camelCase or snake_case (the genai SDK mixes them). The body has no room
for ``bench``, so the panel's call ids go in the ``X-Bench-Panel`` and ``X-Bench-Seats``
headers; streamed, the seats are listed as seated (status ``pending``), since the headers go
before any seat answers. The SSE stream is bare ``data:`` lines only: genai breaks on comments,
``event:`` lines and ``[DONE]``, so a keep-alive is a chunk with empty text.

A route turn is text parts as they come, each tool call a ``functionCall`` part (with the call id,
which a client may echo in its ``functionResponse``) when the turn ends, then the finish reason and
the member's usage. The conversation, member and call id go in headers (``X-Bench-Call`` when known
before the reply is sent).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from benchwarmers_mcp.context import Context
from benchwarmers_mcp.engine import report
from benchwarmers_mcp.engine.panel import PanelRun
from benchwarmers_mcp.engine.route import RouteTurn
from benchwarmers_mcp.errors import BadRequest, BenchError, NotFound, Unsupported
from benchwarmers_mcp.gateway import face, images, options, tool_defs
from benchwarmers_mcp.gateway.face import Dialect, handle_ask
from benchwarmers_mcp.gateway.sse import SSE_HEADERS, dumps, sse
from benchwarmers_mcp.gateway.tool_ids import CallIds, arguments_text
from benchwarmers_mcp.inbound import context, guarded, key_name, read_json
from benchwarmers_mcp.messages import Answer, Ask, Message, Part, Text, Tool, ToolCall, ToolResult, Usage
from benchwarmers_mcp.store.collections import Collection
from benchwarmers_mcp.streamed import Streamed

SAMPLING = {"temperature": "temperature", "topP": "top_p", "maxOutputTokens": "max_tokens", "stopSequences": "stop",
            "seed": "seed", "presencePenalty": "presence_penalty", "frequencyPenalty": "frequency_penalty",
            "candidateCount": "n"}
HOSTED_TOOLS = ("googleSearch", "googleSearchRetrieval", "codeExecution", "urlContext", "googleMaps", "computerUse",
                "fileSearch", "enterpriseWebSearch", "retrieval")
HOSTED_PARTS = ("executableCode", "codeExecutionResult", "toolCall", "toolResponse")
STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
          429: "RESOURCE_EXHAUSTED", 502: "UNAVAILABLE", 503: "UNAVAILABLE"}
FILES_API = re.compile(r"^https?://generativelanguage\.googleapis\.com/.*/files/|^gs://")
METHODS = ("generateContent", "streamGenerateContent", "countTokens")
FINISH = {"length": "MAX_TOKENS", "content_filter": "SAFETY"}


def get(obj: dict[str, Any], camel: str) -> Any:
    """A field by its camelCase name, or its snake_case twin."""
    if camel in obj:
        return obj[camel]
    return obj.get(re.sub(r"[A-Z]", lambda m: "_" + m.group(0).lower(), camel))


def snake_to_camel(obj: Any) -> Any:
    if not isinstance(obj, dict):
        return obj
    return {re.sub(r"_([a-z])", lambda m: m.group(1).upper(), k): v for k, v in obj.items()}


# ---- parse -------------------------------------------------------------------------------------

def _media(part: dict[str, Any], where: str) -> Part:
    inline = get(part, "inlineData")
    if inline is not None:
        if not isinstance(inline, dict):
            raise BadRequest(f"{where}.inlineData must be an object")
        return images.from_base64(inline.get("data"), get(inline, "mimeType"), f"{where}.inlineData")
    data = get(part, "fileData")
    if not isinstance(data, dict):
        raise BadRequest(f"{where}.fileData must be an object")
    uri, mime = get(data, "fileUri"), get(data, "mimeType")
    if isinstance(mime, str) and mime and not mime.lower().startswith("image/"):
        raise Unsupported(f"{where}.fileData: {mime} is not supported; only images can be sent to a panel")
    if isinstance(uri, str) and FILES_API.match(uri):
        raise Unsupported(f"{where}.fileData: files uploaded to the Gemini Files API or Cloud Storage are not "
                          "supported; send inlineData or an http(s) image URL")
    return images.parse_image_url(uri, f"{where}.fileData.fileUri")


def _part(part: Any, where: str, ids: CallIds) -> Part | None:
    if not isinstance(part, dict):
        raise BadRequest(f"{where} must be an object")
    if "text" in part:
        if not isinstance(part["text"], str):
            raise BadRequest(f"{where}.text must be a string")
        return None if part.get("thought") is True else Text(part["text"])
    if get(part, "inlineData") is not None or get(part, "fileData") is not None:
        return _media(part, where)
    call = get(part, "functionCall")
    if isinstance(call, dict) and isinstance(call.get("name"), str):
        return ToolCall(ids.call(call["name"], call.get("id")), call["name"],
                        arguments_text(call.get("args"), f"{where}.functionCall.args"))
    result = get(part, "functionResponse")
    if isinstance(result, dict) and isinstance(result.get("name"), str):
        response = result.get("response")
        return ToolResult(ids.result(result["name"], result.get("id")), dumps(response if response is not None else {}),
                          name=result["name"])
    if any(get(part, k) is not None for k in HOSTED_PARTS):
        raise Unsupported(f"{where}: code-execution parts belong to Gemini's hosted tools, which are not supported")
    if get(part, "thoughtSignature") is not None:
        return None
    raise BadRequest(f"{where} must carry text, inlineData, fileData, functionCall or functionResponse")


def _content(content: Any, where: str, ids: CallIds) -> list[Message]:
    if not isinstance(content, dict):
        raise BadRequest(f"{where} must be an object with role and parts")
    role = content.get("role") or "user"
    raw = content.get("parts")
    if not isinstance(raw, list):
        raise BadRequest(f"{where}.parts must be a list")
    parts: list[Part] = []
    for i, item in enumerate(raw):
        part = _part(item, f"{where}.parts[{i}]", ids)
        if part is not None:
            parts.append(part)
    if role == "model":
        if any(not isinstance(p, Text | ToolCall) for p in parts):
            raise BadRequest(f"{where}: a model turn carries text and functionCall parts only")
        return [Message("assistant", tuple(parts))]
    if role not in ("user", "function"):
        raise BadRequest(f"{where}.role must be user or model")
    if any(isinstance(p, ToolCall) for p in parts):
        raise BadRequest(f"{where}: functionCall parts belong in model turns")
    results = [Message("tool", (p,)) for p in parts if isinstance(p, ToolResult)]
    rest = tuple(p for p in parts if not isinstance(p, ToolResult))
    return results + ([Message("user", rest)] if rest else [])


def parse_contents(raw: Any) -> tuple[Message, ...]:
    if isinstance(raw, dict):
        raw = [raw]
    if not isinstance(raw, list) or not raw:
        raise BadRequest("contents must be a non-empty list")
    ids = CallIds()
    out = [m for i, c in enumerate(raw) for m in _content(c, f"contents[{i}]", ids)]
    if not any(m.role in ("user", "tool") for m in out):
        raise BadRequest("contents has no user turn")
    return tuple(out)


def parse_system(raw: Any) -> str | None:
    if raw is None:
        return None
    if isinstance(raw, str):
        return raw or None
    parts = raw.get("parts") if isinstance(raw, dict) else None
    if not isinstance(parts, list) or not all(isinstance(p, dict) and isinstance(p.get("text"), str) for p in parts):
        raise BadRequest("systemInstruction must be {\"parts\": [{\"text\": ...}]}")
    return "\n\n".join(p["text"] for p in parts) or None


def lower_types(schema: Any) -> Any:
    """Gemini writes schema types in upper case (OBJECT, STRING); JSON Schema wants lower case."""
    if isinstance(schema, list):
        return [lower_types(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: lower_types(v) for k, v in schema.items()}
    if isinstance(out.get("type"), str):
        out["type"] = out["type"].lower()
    return out


def parse_tools(raw: Any) -> tuple[Tool, ...]:
    tools = []
    for i, t in tool_defs.objects(raw):
        hosted = [k for k in HOSTED_TOOLS if get(t, k) is not None]
        if hosted:
            raise Unsupported(f"tools[{i}]: Gemini's hosted tool {hosted[0]} is not supported; declare functions")
        declarations = get(t, "functionDeclarations") or []
        if not isinstance(declarations, list):
            raise BadRequest(f"tools[{i}].functionDeclarations must be a list")
        for j, d in enumerate(declarations):
            if not isinstance(d, dict) or not isinstance(d.get("name"), str):
                raise BadRequest(f"tools[{i}].functionDeclarations[{j}] needs a name")
            params = get(d, "parametersJsonSchema") or d.get("parameters")
            tools.append(tool_defs.tool(d["name"], d.get("description"), lower_types(params)))
    return tuple(tools)


def parse_tool_choice(raw: Any) -> Any:
    config = get(raw, "functionCallingConfig") if isinstance(raw, dict) else None
    if not isinstance(config, dict):
        return None
    mode = str(config.get("mode") or "AUTO").upper()
    allowed = get(config, "allowedFunctionNames")
    if mode in ("ANY", "VALIDATED") and isinstance(allowed, list) and len(allowed) == 1 and isinstance(allowed[0], str):
        return {"type": "function", "function": {"name": allowed[0]}}
    return {"ANY": "required", "NONE": "none"}.get(mode, "auto")


def parse_generation(raw: Any) -> tuple[dict[str, Any], dict[str, Any] | None]:
    config = snake_to_camel(raw) if raw is not None else {}
    opts = options.pick(config, SAMPLING, "generationConfig.")
    schema = get(config, "responseJsonSchema") or get(config, "responseSchema")
    wants_json = str(get(config, "responseMimeType") or "").lower() == "application/json"
    fmt = options.json_schema_format(lower_types(schema)) if schema or wants_json else None
    return opts, fmt


def parse(body: dict[str, Any], key_name: str = "local") -> Ask:
    """The handler puts the path's model and whether it streams into the body as ``model`` and ``stream``."""
    collection, reply, nominees = face.named(body, body.get("model"))
    if get(body, "cachedContent") is not None:
        raise Unsupported("cachedContent is not supported: nothing is stored; send the contents")
    opts, fmt = parse_generation(get(body, "generationConfig"))
    return Ask(
        collection=collection, messages=parse_contents(body.get("contents")),
        system=parse_system(get(body, "systemInstruction")), reply=reply, with_=nominees,
        stream=body.get("stream") is True, tools=parse_tools(body.get("tools")),
        tool_choice=parse_tool_choice(get(body, "toolConfig")), response_format=fmt, options=opts,
        model_name=str(body["model"]), key_name=key_name,
    )


# ---- render: shared by panels and route turns ---------------------------------------------------

def response(ask: Ask, response_id: str, parts: list[dict[str, Any]], usage: Usage | None = None,
             finish: str = "STOP") -> dict[str, Any]:
    """One ``GenerateContentResponse`` (panels and route turns alike); with ``usage`` it is the last."""
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    out: dict[str, Any] = {"candidates": [candidate], "modelVersion": ask.model_name, "responseId": response_id}
    if usage is not None:
        candidate["finishReason"] = finish
        out["usageMetadata"] = {"promptTokenCount": usage.input_tokens, "candidatesTokenCount": usage.output_tokens,
                                "totalTokenCount": usage.total}
    return out


async def sse_frames(items: AsyncIterator[dict[str, Any]]) -> AsyncIterator[bytes]:
    """``alt=sse``: each object a bare ``data:`` line."""
    async for item in items:
        yield sse(item)


async def array_frames(items: AsyncIterator[dict[str, Any]]) -> AsyncIterator[bytes]:
    """Without ``alt=sse``: one JSON array, sent as it grows."""
    separator = "["
    async for item in items:
        yield (separator + dumps(item)).encode()
        separator = ",\n"
    yield b"[]" if separator == "[" else b"]"


def framed(body: dict[str, Any], items: AsyncIterator[dict[str, Any]]) -> tuple[AsyncIterator[bytes], str]:
    """The stream's frames and media type, as the request's ``alt`` asks."""
    if body.get("alt") == "sse":
        return sse_frames(items), "text/event-stream"
    return array_frames(items), "application/json"


# ---- render: a panel ---------------------------------------------------------------------------

def chunk(ask: Ask, run: PanelRun, text: str, usage: Usage | None = None) -> dict[str, Any]:
    return response(ask, run.id, [{"text": text}], usage)


def seated_header(run: PanelRun) -> str:
    """``X-Bench-Seats`` before any seat has answered: every seat as seated, status pending."""
    return json.dumps([{"call": f"{run.id}.{s.key}", "seat": s.label, "alias": s.alias, "status": "pending"}
                       for s in run.seating.seats], separators=(",", ":"))


def seats_header(run: PanelRun) -> str:
    """``X-Bench-Seats`` once the panel is done: the seats as compact JSON (the body has no room)."""
    return json.dumps([{"call": s.call, "seat": s.label, "alias": s.alias, "status": s.status}
                       for s in run.seats_in_seat_order()], separators=(",", ":"))


async def chunks(run: PanelRun, ask: Ask, keepalive: float) -> AsyncIterator[dict[str, Any]]:
    """The stream's objects, framing aside; an error after the 200 is the last one."""
    sent: list[str] = []
    try:
        async for piece in face.pieces(run, keepalive):
            if piece is not None:
                sent.append(piece)
            yield chunk(ask, run, piece or "")
        yield chunk(ask, run, "", face.panel_usage(run, ask, "".join(sent)))
    except Exception as e:
        yield error_body(face.as_bench_error(e))


def respond(run: PanelRun, ask: Ask, body: dict[str, Any], ctx: Context, overhead_ms: float) -> Response:
    headers = face.reply_headers(run, overhead_ms)
    if ask.stream:
        headers["X-Bench-Seats"] = seated_header(run)
        frames, media_type = framed(body, chunks(run, ask, ctx.settings.keepalive))
        return Streamed(frames, media_type=media_type, headers={**SSE_HEADERS, **headers})
    text = report.content(run)
    headers["X-Bench-Seats"] = seats_header(run)
    return JSONResponse(chunk(ask, run, text, face.panel_usage(run, ask, text)), headers=headers)


# ---- render: a route turn ----------------------------------------------------------------------

def _turn_chunk(turn: RouteTurn, ask: Ask, parts: list[dict[str, Any]],
                answer: Answer | None = None) -> dict[str, Any]:
    response_id = turn.call or turn.conversation
    if answer is None:
        return response(ask, response_id, parts)
    return response(ask, response_id, parts, answer.usage or Usage(), FINISH.get(answer.finish_reason, "STOP"))


def _calls(answer: Answer) -> list[dict[str, Any]]:
    return [{"functionCall": {"id": c.id, "name": c.name, "args": face.arguments_object(c)}}
            for c in answer.tool_calls]


def turn_headers(turn: RouteTurn) -> dict[str, str]:
    out = face.route_headers(turn)
    if turn.call:
        out["X-Bench-Call"] = turn.call
    return out


async def turn_chunks(turn: RouteTurn, ask: Ask, keepalive: float) -> AsyncIterator[dict[str, Any]]:
    """The stream's objects, framing aside: text (an empty one is a keep-alive), the calls, the
    finish; an error after the reply has started is the last one."""
    try:
        async for piece in face.texts(turn, keepalive):
            yield _turn_chunk(turn, ask, [{"text": piece or ""}])
        answer = turn.answer
        yield _turn_chunk(turn, ask, _calls(answer) or [{"text": ""}], answer)
    except BenchError as e:
        yield error_body(e)


async def respond_route(ctx: Context, ask: Ask, body: dict[str, Any], collection: Collection,
                        request: Request) -> Response:
    turn = await face.begin(ctx, ask, collection, request)
    if ask.stream:
        frames, media_type = framed(body, turn_chunks(turn, ask, ctx.settings.keepalive))
        return face.streaming(turn, frames, media_type, {**SSE_HEADERS, **turn_headers(turn)})
    answer = await turn.collect()
    parts = ([{"text": answer.text}] if answer.text else []) + _calls(answer)
    return JSONResponse(_turn_chunk(turn, ask, parts or [{"text": ""}], answer), headers=turn_headers(turn))


# ---- errors and the handler --------------------------------------------------------------------


def error_body(error: BenchError) -> dict[str, Any]:
    status = STATUS.get(error.status) or ("INTERNAL" if error.status >= 500 else "INVALID_ARGUMENT")
    return {"error": {"code": error.status, "message": error.message, "status": status}}


def render_error(error: BenchError) -> Response:
    return JSONResponse(error_body(error), status_code=error.status, headers=error.headers)


DIALECT = Dialect("gemini", parse, respond, render_error, respond_route)


def split_method(rest: str) -> tuple[str, str]:
    """``bench/core:merged:generateContent`` -> (``bench/core:merged``, ``generateContent``): the last colon."""
    model, colon, method = rest.rpartition(":")
    if not colon or method not in METHODS:
        raise NotFound(f"no Gemini method {method or rest!r} on models/{model or rest}; the gateway answers "
                       ":generateContent, :streamGenerateContent and :countTokens")
    return model, method


@guarded(render_error)
async def model_method(request: Request) -> Response:
    """``POST /v1beta/models/<collection>:<method>`` (and the same under ``/v1``)."""
    model, method = split_method(request.path_params["rest"])
    body = await read_json(request, context(request).settings.max_body)
    if method == "countTokens":
        nested = get(body, "generateContentRequest")
        inner = nested if isinstance(nested, dict) else body
        ask = parse({**inner, "model": model, "stream": False}, key_name(request))
        return JSONResponse({"totalTokens": await face.counted(request, ask)})
    body = {**body, "model": model, "stream": method == "streamGenerateContent",
            "alt": request.query_params.get("alt")}
    return await handle_ask(request, DIALECT, body)
