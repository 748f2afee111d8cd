"""Ollama's native API: ``POST /api/chat``, ``/api/generate``, ``/api/show``; ``GET /api/version``
and ``/api/ps`` (``GET /api/tags`` is in ``model_lists``).

Streaming is on unless ``"stream": false``, as NDJSON with no blank lines (the client breaks on
one): a keep-alive is a line with empty content and the ``done`` line carries ``bench``.
Images are raw base64 with the type sniffed from the first bytes. Tool calls carry no ids, so
they are numbered per request and each ``tool`` message answers the oldest open call of its
``tool_name``. Ollama's ``:latest`` tag is read as no tag; ``:all``/``:merged``/``:route`` are
the reply modes. An empty prompt (or no messages) only "loads" the collection, as Ollama does.

A route turn is text lines as they come (a keep-alive is an empty line of content), the tool calls
in one ``tool_calls`` line when the turn ends (arguments as an object, the call id alongside for
clients that keep it), then the ``done`` line with the member's counts, real durations and ``bench``.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from benchwarmers_mcp.context import Context
from benchwarmers_mcp.engine import report
from benchwarmers_mcp.engine.collections import split_model
from benchwarmers_mcp.engine.panel import PanelRun
from benchwarmers_mcp.engine.route import RouteTurn
from benchwarmers_mcp.errors import BadRequest, BenchError, NotFound, Unsupported
from benchwarmers_mcp.gateway import face, images, options, tool_defs
from benchwarmers_mcp.gateway.face import Dialect, RespondPanel, RespondRoute, handle_ask
from benchwarmers_mcp.gateway.sse import ndjson
from benchwarmers_mcp.gateway.tool_ids import CallIds, arguments_text, function_calls
from benchwarmers_mcp.inbound import context, guarded, read_json
from benchwarmers_mcp.messages import Answer, Ask, Message, Part, Text, Tool, ToolCall, ToolResult, Usage
from benchwarmers_mcp.store.collections import Collection
from benchwarmers_mcp.streamed import Streamed

VERSION = "0.12.0"
SAMPLING = {"temperature": "temperature", "top_p": "top_p", "num_predict": "max_tokens", "stop": "stop",
            "seed": "seed", "presence_penalty": "presence_penalty", "frequency_penalty": "frequency_penalty"}
NDJSON = "application/x-ndjson"


# ---- parse -------------------------------------------------------------------------------------

def model_name(raw: Any) -> Any:
    """Ollama's implicit tag: ``bench/core:latest`` is ``bench/core``."""
    return raw[: -len(":latest")] if isinstance(raw, str) and raw.endswith(":latest") else raw


def _images(raw: Any, where: str) -> list[Part]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise BadRequest(f"{where}.images must be a list of base64 strings")
    return [images.from_raw_base64(data, f"{where}.images[{i}]") for i, data in enumerate(raw)]


def _text(m: dict[str, Any], where: str) -> str:
    content = m.get("content")
    if content is None:
        return ""
    if not isinstance(content, str):
        raise BadRequest(f"{where}.content must be a string")
    return content


def _tool_calls(raw: Any, where: str, ids: CallIds) -> list[Part]:
    calls: list[Part] = []
    for i, call, fn in function_calls(raw, where):
        args = arguments_text(fn.get("arguments"), f"{where}.tool_calls[{i}].function.arguments")
        calls.append(ToolCall(ids.call(fn["name"], call.get("id")), fn["name"], args))
    return calls


def parse_messages(raw: Any) -> tuple[str | None, tuple[Message, ...]]:
    if not isinstance(raw, list):
        raise BadRequest("messages must be a list")
    system: list[str] = []
    out: list[Message] = []
    ids = CallIds()
    for i, m in enumerate(raw):
        where = f"messages[{i}]"
        if not isinstance(m, dict):
            raise BadRequest(f"{where} must be an object")
        role, text = m.get("role"), _text(m, where)
        if role == "system":
            system.append(text)
        elif role == "user":
            out.append(Message("user", tuple(([Text(text)] if text else []) + _images(m.get("images"), where))))
        elif role == "assistant":
            parts: list[Part] = [Text(text)] if text else []
            out.append(Message("assistant", tuple(parts + _tool_calls(m.get("tool_calls"), where, ids))))
        elif role == "tool":
            name = m.get("tool_name") if isinstance(m.get("tool_name"), str) else None
            call_id = ids.result(name, m.get("tool_call_id"))
            out.append(Message("tool", (ToolResult(call_id, text, name=name),)))
        else:
            raise BadRequest(f"{where}.role must be system, user, assistant or tool")
    if not any(m.role in ("user", "tool") for m in out):
        raise BadRequest("messages has no user message")
    return ("\n\n".join(s for s in system if s) or None), tuple(out)


def parse_tools(raw: Any) -> tuple[Tool, ...]:
    return tuple(tool_defs.function_tool(t.get("function") if isinstance(t, dict) else None, i)
                 for i, t in enumerate(tool_defs.entries(raw)))


def _common(body: dict[str, Any]) -> dict[str, Any]:
    """What chat and generate share: the model, reply mode, stream flag, options and format."""
    if body.get("context") is not None:
        raise Unsupported("context (the token state of an earlier generate) is not supported: a panel has no "
                          "single model state; send the conversation to /api/chat instead")
    collection, reply, nominees = face.named(body, model_name(body.get("model")))
    stream = body.get("stream", True)
    if not isinstance(stream, bool):
        raise BadRequest("stream must be true or false")
    opts = {k: v for k, v in options.pick(body.get("options"), SAMPLING, "options.").items()
            if not (k == "max_tokens" and v < 0)}
    fmt = body.get("format")
    return {"collection": collection, "reply": reply, "with_": nominees, "stream": stream,
            "options": opts, "response_format": options.json_schema_format(fmt) if fmt else None,
            "model_name": str(body["model"])}


def parse(body: dict[str, Any], key_name: str = "local") -> Ask:
    """``/api/chat``."""
    common = _common(body)
    system, messages = parse_messages(body.get("messages"))
    return Ask(messages=messages, system=system, tools=parse_tools(body.get("tools")), key_name=key_name, **common)


def parse_generate(body: dict[str, Any], key_name: str = "local") -> Ask:
    """``/api/generate``: one prompt, an optional system text and images."""
    common = _common(body)
    prompt, system = body.get("prompt") or "", body.get("system")
    if not isinstance(prompt, str):
        raise BadRequest("prompt must be a string")
    if system is not None and not isinstance(system, str):
        raise BadRequest("system must be a string")
    if body.get("suffix"):
        raise Unsupported("suffix (fill-in-the-middle) is not supported on a panel; send the whole prompt")
    parts = ([Text(prompt)] if prompt else []) + _images(body.get("images"), "body")
    if not parts:
        raise BadRequest("prompt is empty")
    return Ask(messages=(Message("user", tuple(parts)),), system=system or None, key_name=key_name, **common)


# ---- render: shared by panels and route turns ---------------------------------------------------

def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def line(ask: Ask, field: str, text: str) -> dict[str, Any]:
    """One line of the reply: ``message`` (chat) or ``response`` (generate) carrying ``text``."""
    body: Any = {"role": "assistant", "content": text} if field == "message" else text
    return {"model": ask.model_name, "created_at": _now(), field: body, "done": False}


def done_line(ask: Ask, field: str, text: str, usage: Usage, started: float, bench: dict[str, Any],
              reason: str = "stop") -> dict[str, Any]:
    """The last line (panels and route turns alike): the counts, the real durations since
    ``started`` (monotonic) and ``bench``."""
    elapsed = int((time.monotonic() - started) * 1e9)
    return {**line(ask, field, text), "done": True, "done_reason": reason, "total_duration": elapsed,
            "load_duration": 0, "prompt_eval_count": usage.input_tokens, "prompt_eval_duration": 0,
            "eval_count": usage.output_tokens, "eval_duration": elapsed, "bench": bench}


# ---- render: a panel ---------------------------------------------------------------------------

def _done(run: PanelRun, ask: Ask, field: str, text: str, whole: str) -> dict[str, Any]:
    return done_line(ask, field, text, face.panel_usage(run, ask, whole), run.started, report.panel_bench(run))


async def stream_panel(run: PanelRun, ask: Ask, field: str, keepalive: float) -> AsyncIterator[bytes]:
    sent: list[str] = []
    try:
        async for piece in face.pieces(run, keepalive):
            sent.append(piece or "")
            yield ndjson(line(ask, field, piece or ""))
        yield ndjson(_done(run, ask, field, "", "".join(sent)))
    except Exception as e:
        yield ndjson({"error": face.as_bench_error(e).message})


def responder(field: str) -> RespondPanel:
    """A panel for ``/api/chat`` (``message``) or ``/api/generate`` (``response``)."""

    def respond(run: PanelRun, ask: Ask, body: dict[str, Any], ctx: Context, overhead_ms: float) -> Response:
        headers = face.reply_headers(run, overhead_ms)
        if ask.stream:
            return Streamed(stream_panel(run, ask, field, ctx.settings.keepalive), media_type=NDJSON,
                            headers=headers)
        text = report.content(run)
        return JSONResponse(_done(run, ask, field, text, text), headers=headers)

    return respond


# ---- render: a route turn ----------------------------------------------------------------------

def _map_call(call: ToolCall, index: int) -> dict[str, Any]:
    return {"id": call.id, "function": {"index": index, "name": call.name,
                                        "arguments": face.arguments_object(call)}}


def _with_calls(line: dict[str, Any], answer: Answer) -> dict[str, Any]:
    if answer.tool_calls and isinstance(line.get("message"), dict):
        line["message"]["tool_calls"] = [_map_call(c, i) for i, c in enumerate(answer.tool_calls)]
    return line


def _turn_done(turn: RouteTurn, ask: Ask, field: str, text: str, answer: Answer, started: float) -> dict[str, Any]:
    reason = "length" if answer.finish_reason == "length" else "stop"
    return done_line(ask, field, text, answer.usage or Usage(), started, report.turn_bench(turn), reason)


async def stream_turn(turn: RouteTurn, ask: Ask, field: str, keepalive: float,
                      started: float) -> AsyncIterator[bytes]:
    try:
        async for piece in face.texts(turn, keepalive):
            yield ndjson(line(ask, field, piece or ""))
        answer = turn.answer
        if answer.tool_calls:
            yield ndjson(_with_calls(line(ask, field, ""), answer))
        yield ndjson(_turn_done(turn, ask, field, "", answer, started))
    except BenchError as e:
        yield ndjson({"error": e.message})


def route_responder(field: str) -> RespondRoute:
    """Route mode for ``/api/chat`` (``message``) or ``/api/generate`` (``response``)."""

    async def respond_route(ctx: Context, ask: Ask, body: dict[str, Any], collection: Collection,
                            request: Request) -> Response:
        started = time.monotonic()
        turn = await face.begin(ctx, ask, collection, request)
        if ask.stream:
            return face.streaming(turn, stream_turn(turn, ask, field, ctx.settings.keepalive, started), NDJSON)
        answer = await turn.collect()
        return JSONResponse(_with_calls(_turn_done(turn, ask, field, answer.text, answer, started), answer),
                            headers=face.route_headers(turn))

    return respond_route


# ---- errors and handlers -----------------------------------------------------------------------

def render_error(error: BenchError) -> Response:
    return JSONResponse({"error": error.message}, status_code=error.status, headers=error.headers)


DIALECT = Dialect("ollama", parse, responder("message"), render_error, route_responder("message"))
GENERATE = Dialect("ollama-generate", parse_generate, responder("response"), render_error,
                   route_responder("response"))


async def _load(request: Request, body: dict[str, Any], field: str) -> Response:
    """No prompt at all: Ollama's way to load a model. Checks the collection, runs nothing."""
    collection, _ = split_model(model_name(body.get("model")))
    await face.resolve_for(request, collection)
    loaded = line(Ask(collection, (), model_name=str(body["model"])), field, "")
    return JSONResponse({**loaded, "done": True, "done_reason": "load"})


@guarded(render_error)
async def chat(request: Request) -> Response:
    body = await read_json(request, context(request).settings.max_body)
    if body.get("messages") in (None, []):
        return await _load(request, body, "message")
    return await handle_ask(request, DIALECT, body)


@guarded(render_error)
async def generate(request: Request) -> Response:
    body = await read_json(request, context(request).settings.max_body)
    if not body.get("prompt") and not body.get("images") and body.get("context") is None:
        return await _load(request, body, "response")
    return await handle_ask(request, GENERATE, body)


@guarded(render_error)
async def show(request: Request) -> Response:
    body = await read_json(request, context(request).settings.max_body)
    name = model_name(body.get("model") or body.get("name"))
    if not isinstance(name, str) or not name:
        raise BadRequest("model is required")
    items = await face.listed(request)
    wanted = name if name.startswith("bench/") else f"bench/{name}"
    found = next((item for listed, item in items if listed == wanted), None)
    if found is None:
        raise NotFound(f"model '{name}' not found; GET /api/tags lists the collections")
    return JSONResponse(show_body(found))


def show_body(item: dict[str, Any]) -> dict[str, Any]:
    together = item["together"]
    info: dict[str, Any] = {"general.architecture": "benchwarmers", "general.basename": item["id"],
                            "benchwarmers.members": ", ".join(item["members"]),
                            "benchwarmers.explorers": item["explorers"], "benchwarmers.reply": item["reply"]}
    if together["context_window"]:
        info["benchwarmers.context_length"] = together["context_window"]
    capabilities = ["completion"] + [c for c in ("tools", "vision") if c in together["capabilities"]]
    return {"license": "", "modelfile": f"# {item['id']}: {item['description']}\n", "parameters": "",
            "template": "", "details": details(item), "model_info": info, "capabilities": capabilities,
            "modified_at": _now()}


def details(item: dict[str, Any]) -> dict[str, Any]:
    return {"parent_model": "", "format": "panel", "family": "benchwarmers", "families": ["benchwarmers"],
            "parameter_size": f"{len(item['members'])} members + {item['explorers']} explorers",
            "quantization_level": ""}


async def version(request: Request) -> Response:
    return JSONResponse({"version": VERSION})


async def running(request: Request) -> Response:
    """``/api/ps``: no model is loaded in this process; every seat runs where it is hosted."""
    return JSONResponse({"models": []})
