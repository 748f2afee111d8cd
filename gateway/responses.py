"""OpenAI Responses: ``POST /v1/responses``, whole and streamed as typed events numbered with
``sequence_number`` and ending at ``response.completed`` (which carries ``bench``).

Nothing is stored, so ``previous_response_id`` and ``conversation`` are refused and ``store`` is
answered ``false``. Every tool kind the API defines is accepted (``responses_tools``): functions,
custom tools (Codex's free-form ``apply_patch``, a function taking one string, ``input``),
namespace groups (Codex's MCP servers) flattened to ``<namespace>__<name>``, and the tools the
client runs (shells, ``apply_patch``, a client-side tool search) as functions; the tools OpenAI
runs itself are left out of the member's request and listed in ``bench.dropped_tools``.

A route turn is the member's text as a ``message`` item (streamed as it comes), and each tool call
the item its tool's kind calls for: a ``function_call`` (with its ``namespace`` when the tool came
in one), a ``custom_tool_call``, a ``shell_call``, an ``apply_patch_call``...; ``bench`` rides on
the response and on ``response.completed``.
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
from benchwarmers_mcp.gateway import face, images, options, responses_tools, retry
from benchwarmers_mcp.gateway.face import Dialect, handle_ask
from benchwarmers_mcp.gateway.responses_tools import Toolbox
from benchwarmers_mcp.gateway.sse import KEEPALIVE_COMMENT, SSE_HEADERS, Frame, sse
from benchwarmers_mcp.inbound import guarded
from benchwarmers_mcp.messages import (
    Answer,
    Ask,
    Image,
    Message,
    Part,
    Text,
    ToolCall,
    ToolResult,
    Usage,
)
from benchwarmers_mcp.store.collections import Collection
from benchwarmers_mcp.streamed import Streamed

SAMPLING = {"max_output_tokens": "max_tokens", "temperature": "temperature", "top_p": "top_p"}
EMPTY_PART = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}


# ---- parse -------------------------------------------------------------------------------------

def _part(part: Any, where: str) -> Part:
    if isinstance(part, str):
        return Text(part)
    if not isinstance(part, dict):
        raise BadRequest(f"{where} must be an object")
    kind = part.get("type")
    if kind in ("input_text", "output_text", "text", "refusal"):
        text = part.get("refusal" if kind == "refusal" else "text")
        if not isinstance(text, str):
            raise BadRequest(f"{where}.text must be a string")
        return Text(text)
    if kind == "input_image":
        if part.get("file_id"):
            raise Unsupported(f"{where}: images given as uploaded file ids are not supported; send image_url")
        return images.parse_image_url(part.get("image_url"), f"{where}.image_url")
    if kind in ("input_file", "input_audio", "file"):
        raise Unsupported(f"{where}: {kind} parts (PDFs, audio, files) are not supported; send text or images")
    raise BadRequest(f"{where}: unknown content part type {kind!r}")


def _parts(content: Any, where: str, field: str = "content") -> list[Part]:
    if isinstance(content, str):
        return [Text(content)]
    if not isinstance(content, list):
        raise BadRequest(f"{where}.{field} must be a string or a list of parts")
    return [_part(p, f"{where}.{field}[{i}]") for i, p in enumerate(content)]


def _call_id(item: dict[str, Any], where: str) -> str:
    call_id = item.get("call_id")
    if not isinstance(call_id, str) or not call_id:
        raise BadRequest(f"{where}.call_id must be a string")
    return call_id


def _tool_output(item: dict[str, Any], where: str) -> tuple[Message, list[Image]]:
    output = item.get("output")
    parts = _parts(output if output is not None else "", where, "output")
    text = "\n".join(p.text for p in parts if isinstance(p, Text))
    pictures = [p for p in parts if isinstance(p, Image)]
    return Message("tool", (ToolResult(_call_id(item, where), text),)), pictures


def _message(item: dict[str, Any], where: str, system: list[str]) -> Message | None:
    role = item.get("role")
    parts = _parts(item.get("content"), where)
    if role in ("system", "developer"):
        system.extend(p.text for p in parts if isinstance(p, Text))
        return None
    if role == "user":
        return Message("user", tuple(parts))
    if role == "assistant":
        if any(isinstance(p, Image) for p in parts):
            raise BadRequest(f"{where}: an assistant message cannot carry an image")
        return Message("assistant", tuple(parts))
    raise BadRequest(f"{where}.role must be user, assistant, system or developer")


def _assistant_call(call: ToolCall, out: list[Message]) -> None:
    if out and out[-1].role == "assistant":
        out[-1] = Message("assistant", (*out[-1].parts, call))
    else:
        out.append(Message("assistant", (call,)))


def _item(item: Any, where: str, system: list[str], out: list[Message], box: Toolbox) -> None:
    if not isinstance(item, dict):
        raise BadRequest(f"{where} must be an object")
    kind = item.get("type", "message" if "role" in item else None)
    if kind == "message":
        message = _message(item, where, system)
        if message is not None:
            out.append(message)
    elif kind in responses_tools.CALL_ITEMS:
        call = responses_tools.call_of({**item, "type": kind}, where, box)
        if call is not None:
            _assistant_call(call, out)
    elif kind in ("function_call_output", "custom_tool_call_output"):
        result, pictures = _tool_output(item, where)
        out.append(result)
        if pictures:
            out.append(Message("user", tuple(pictures)))
    elif kind in responses_tools.OUTPUT_ITEMS:
        answer = responses_tools.builtin_result({**item, "type": kind}, where, box)
        if answer is not None:
            out.append(Message("tool", (answer,)))
    elif kind == "additional_tools":
        tools = item.get("tools")
        for i, t in enumerate(tools if isinstance(tools, list) else []):
            box.add(t, f"{where}.tools[{i}]")
    elif kind == "reasoning" or kind in responses_tools.HOSTED_ITEMS:
        return  # the member cannot read OpenAI's reasoning, nor use what OpenAI's own tools did
    elif kind == "item_reference":
        raise Unsupported(f"{where}: item_reference needs stored items, and nothing is stored; send the items")
    else:
        raise BadRequest(f"{where}: unknown input item type {kind!r}")


def parse_input(raw: Any, instructions: Any, box: Toolbox | None = None) -> tuple[str | None, tuple[Message, ...]]:
    if instructions is not None and not isinstance(instructions, str):
        raise BadRequest("instructions must be a string")
    box = box if box is not None else Toolbox()
    system = [instructions] if instructions else []
    out: list[Message] = []
    if isinstance(raw, str) and raw:
        out.append(Message("user", (Text(raw),)))
    elif isinstance(raw, list):
        for i, item in enumerate(raw):
            _item(item, f"input[{i}]", system, out, box)
    else:
        raise BadRequest("input must be a non-empty string or a list of items")
    if not any(m.role in ("user", "tool") for m in out):
        raise BadRequest("input has no user message")
    return ("\n\n".join(system) if system else None), tuple(out)


def parse_tools(body: dict[str, Any]) -> tuple[Toolbox, str | None, tuple[Message, ...], Any]:
    """The request's tools (the ones its conversation brings in too), its system text, messages
    and tool choice. Pure: the renderers call it again for the names, nothing is kept."""
    box = responses_tools.toolbox(body.get("tools"))
    system, messages = parse_input(body.get("input"), body.get("instructions"), box)
    return box, system, messages, box.choice(body.get("tool_choice"))


def parse_text_format(raw: Any) -> dict[str, Any] | None:
    fmt = raw.get("format") if isinstance(raw, dict) else None
    if not isinstance(fmt, dict) or fmt.get("type") in (None, "text"):
        return None
    if fmt.get("type") == "json_schema":
        return options.json_schema_format(fmt.get("schema"), str(fmt.get("name") or "response"))
    return {"type": "json_object"}


def _refuse_state(body: dict[str, Any]) -> None:
    if body.get("previous_response_id") is not None:
        raise BadRequest("previous_response_id is not supported: nothing is stored (store is always false); "
                         "send the whole conversation in input")
    if body.get("conversation") is not None:
        raise BadRequest("conversation is not supported: nothing is stored; send the whole conversation in input")
    if body.get("background") is True:
        raise Unsupported("background responses need storage, and nothing is stored; call without background")
    if body.get("prompt") is not None:
        raise Unsupported("stored prompt templates (prompt) are not supported; send instructions and input")


def parse(body: dict[str, Any], key_name: str = "local") -> Ask:
    collection, reply, nominees = face.named(body, body.get("model"))
    _refuse_state(body)
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise BadRequest("stream must be true or false")
    box, system, messages, choice = parse_tools(body)
    opts = options.pick(body, SAMPLING)
    reasoning = body.get("reasoning")
    if isinstance(reasoning, dict) and reasoning.get("effort") is not None:
        opts.update(options.pick(reasoning, {"effort": "reasoning_effort"}, "reasoning."))
    parallel = body.get("parallel_tool_calls")
    return Ask(
        collection=collection, messages=messages, system=system, reply=reply, with_=nominees,
        stream=stream, tools=tuple(box.tools), tool_choice=choice,
        parallel_tool_calls=parallel if isinstance(parallel, bool) else None,
        response_format=parse_text_format(body.get("text")), options=opts, model_name=str(body["model"]),
        key_name=key_name,
    )


# ---- render: shared by panels and route turns ---------------------------------------------------

class Reply:
    """One response's ids and envelope, shared by the whole reply and every streamed event."""

    def __init__(self, ask: Ask, body: dict[str, Any]) -> None:
        self.id = f"resp_{secrets.token_hex(12)}"
        self.item_id = f"msg_{secrets.token_hex(12)}"
        self.created = int(time.time())
        self.ask = ask
        self.instructions = body.get("instructions") if isinstance(body.get("instructions"), str) else None
        self.metadata = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
        self.sequence = 0

    def item(self, text: str | None, status: str = "completed") -> dict[str, Any]:
        content = [] if text is None else [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}]
        return {"type": "message", "id": self.item_id, "status": status, "role": "assistant", "content": content}

    def envelope(self, status: str, output: list[dict[str, Any]], usage: Usage | None = None,
                 **extra: Any) -> dict[str, Any]:
        return {
            "id": self.id, "object": "response", "created_at": self.created, "status": status, "error": None,
            "incomplete_details": None, "instructions": self.instructions, "model": self.ask.model_name,
            "output": output, "parallel_tool_calls": True, "previous_response_id": None,
            "reasoning": {"effort": None, "summary": None}, "store": False, "text": {"format": {"type": "text"}},
            "tool_choice": "auto", "tools": [], "truncation": "disabled", "metadata": self.metadata,
            "usage": None if usage is None else {
                "input_tokens": usage.input_tokens, "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                "output_tokens": usage.output_tokens, "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": usage.total},
            **extra,
        }

    def _event_body(self, kind: str, sequence: int, **data: Any) -> dict[str, Any]:
        return {"type": kind, "sequence_number": sequence, **data}

    def _text_data(self, **data: Any) -> dict[str, Any]:
        return {"item_id": self.item_id, "output_index": 0, "content_index": 0, **data}

    def event(self, kind: str, **data: Any) -> bytes:
        frame = sse(self._event_body(kind, self.sequence, **data), event=kind)
        self.sequence += 1
        return frame

    def text_event(self, kind: str, **data: Any) -> bytes:
        return self.event(kind, **self._text_data(**data))

    @cached_property
    def _text_delta(self) -> Frame:
        """``text_event("response.output_text.delta", ...)`` as a frame made a token at a time; its
        sequence number is its second value (built on a stream's first token)."""
        kind = "response.output_text.delta"
        return Frame(lambda sequence, delta: self._event_body(kind, sequence, **self._text_data(delta=delta, logprobs=[])),
                     event=kind, holes=2)

    def text_delta(self, piece: str) -> bytes:
        frame = self._text_delta(self.sequence, piece)
        self.sequence += 1
        return frame

    # The event runs a panel and a route turn share, numbered in the order they are made.

    def started(self) -> list[bytes]:
        return [self.event("response.created", response=self.envelope("in_progress", [])),
                self.event("response.in_progress", response=self.envelope("in_progress", []))]

    def text_opened(self) -> list[bytes]:
        """The message item (output 0) and its one text part, before the first delta."""
        return [self.event("response.output_item.added", output_index=0, item=self.item(None, "in_progress")),
                self.text_event("response.content_part.added", part=EMPTY_PART)]

    def text_closed(self, text: str) -> list[bytes]:
        return [self.text_event("response.output_text.done", text=text, logprobs=[]),
                self.text_event("response.content_part.done", part={**EMPTY_PART, "text": text}),
                self.event("response.output_item.done", output_index=0, item=self.item(text))]

    def failed(self, error: BenchError) -> list[bytes]:
        """An error after the 200: the ``error`` event, then ``response.failed``."""
        code = "server_error" if error.status >= 500 else str(error.status)
        failure = self.envelope("failed", [], error={"code": code, "message": error.message})
        return [self.event("error", code=code, message=error.message, param=None),
                self.event("response.failed", response=failure)]


# ---- render: a panel ---------------------------------------------------------------------------

def panel_bench(run: PanelRun, body: dict[str, Any]) -> dict[str, Any]:
    """A panel's ``bench``, with the hosted tools the request offered and no seat was given."""
    bench = report.panel_bench(run)
    dropped = parse_tools(body)[0].dropped
    return {**bench, "dropped_tools": dropped} if dropped else bench


def response(run: PanelRun, ask: Ask, body: dict[str, Any]) -> dict[str, Any]:
    reply = Reply(ask, body)
    text = report.content(run)
    return reply.envelope("completed", [reply.item(text)], face.panel_usage(run, ask, text),
                          bench=panel_bench(run, body))


async def stream_panel(run: PanelRun, ask: Ask, body: dict[str, Any], keepalive: float) -> AsyncIterator[bytes]:
    reply = Reply(ask, body)
    for frame in reply.started() + reply.text_opened():
        yield frame
    sent: list[str] = []
    try:
        async for frame in face.framed(run, keepalive, reply.text_delta, sent):
            yield frame
        text = "".join(sent)
        for frame in reply.text_closed(text):
            yield frame
        final = reply.envelope("completed", [reply.item(text)], face.panel_usage(run, ask, text),
                               bench=panel_bench(run, body))
        yield reply.event("response.completed", response=final)
    except Exception as e:
        for frame in reply.failed(face.as_bench_error(e)):
            yield frame


def respond(run: PanelRun, ask: Ask, body: dict[str, Any], ctx: Context, overhead_ms: float) -> Response:
    headers = face.reply_headers(run, overhead_ms)
    if ask.stream:
        return Streamed(stream_panel(run, ask, body, ctx.settings.keepalive),
                        media_type="text/event-stream", headers={**SSE_HEADERS, **headers})
    return JSONResponse(response(run, ask, body), headers=headers)


# ---- render: a route turn ----------------------------------------------------------------------

def _finish(answer: Answer) -> dict[str, Any]:
    if answer.finish_reason == "length":
        return {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}}
    return {"status": "completed"}


def _output(reply: Reply, answer: Answer, box: Toolbox) -> list[dict[str, Any]]:
    items = [reply.item(answer.text)] if answer.text or not answer.tool_calls else []
    return items + [responses_tools.call_item(c, box) for c in answer.tool_calls]


def _turn_envelope(reply: Reply, turn: RouteTurn, answer: Answer, box: Toolbox) -> dict[str, Any]:
    finish = _finish(answer)
    envelope = reply.envelope(finish.pop("status"), _output(reply, answer, box), answer.usage,
                              bench=report.turn_bench(turn))
    return {**envelope, **finish}


def turn_response(turn: RouteTurn, ask: Ask, body: dict[str, Any], answer: Answer, box: Toolbox) -> dict[str, Any]:
    return _turn_envelope(Reply(ask, body), turn, answer, box)


def _tool_events(reply: Reply, call: ToolCall, index: int, box: Toolbox) -> list[bytes]:
    """One tool call, whole: its item added, its arguments (or input) in one delta, done. The
    items of the client's builtins (shells, patches, tool search) come whole: added, then done."""
    item = responses_tools.call_item(call, box, done=False)
    final = responses_tools.call_item(call, box)
    frames = [reply.event("response.output_item.added", output_index=index, item=item)]
    ids = {"item_id": item["id"], "output_index": index}
    if item["type"] == "custom_tool_call":
        frames += [reply.event("response.custom_tool_call_input.delta", delta=final["input"], **ids),
                   reply.event("response.custom_tool_call_input.done", input=final["input"], **ids)]
    elif item["type"] == "function_call":
        frames += [reply.event("response.function_call_arguments.delta", delta=final["arguments"], **ids),
                   reply.event("response.function_call_arguments.done", arguments=final["arguments"],
                               name=final["name"], **ids)]
    return [*frames, reply.event("response.output_item.done", output_index=index, item=final)]


async def stream_turn(turn: RouteTurn, ask: Ask, body: dict[str, Any], box: Toolbox,
                      keepalive: float) -> AsyncIterator[bytes]:
    reply = Reply(ask, body)
    for frame in reply.started():
        yield frame
    sent: list[str] = []
    try:
        async for piece in face.texts(turn, keepalive):
            if piece is None:
                yield KEEPALIVE_COMMENT
                continue
            if not sent:
                for frame in reply.text_opened():
                    yield frame
            sent.append(piece)
            yield reply.text_delta(piece)
        answer = turn.answer
        if sent:
            for frame in reply.text_closed("".join(sent)):
                yield frame
        for i, call in enumerate(answer.tool_calls, start=1 if sent else 0):
            for frame in _tool_events(reply, call, i, box):
                yield frame
        yield reply.event("response.completed", response=_turn_envelope(reply, turn, answer, box))
    except BenchError as e:
        for frame in reply.failed(e):
            yield frame


async def respond_route(ctx: Context, ask: Ask, body: dict[str, Any], collection: Collection,
                        request: Request) -> Response:
    box = parse_tools(body)[0]  # the names' origins, to map the member's calls back (the Ask keeps names only)
    turn = await face.begin(ctx, ask, collection, request)
    turn.dropped_tools = box.dropped
    if ask.stream:
        return face.streaming(turn, stream_turn(turn, ask, body, box, ctx.settings.keepalive), "text/event-stream",
                              SSE_HEADERS)
    return JSONResponse(turn_response(turn, ask, body, await turn.collect(), box), headers=face.route_headers(turn))


# ---- errors and the handler --------------------------------------------------------------------

def error_body(error: BenchError) -> dict[str, Any]:
    kind = "invalid_request_error" if error.status < 500 else "server_error"
    return {"error": {"message": error.message, "type": kind, "param": None, "code": str(error.status)}}


def render_error(error: BenchError) -> Response:
    return JSONResponse(error_body(error), status_code=error.status, headers=retry.headers_for(error))


DIALECT = Dialect("responses", parse, respond, render_error, respond_route)


@guarded(render_error)
async def create_response(request: Request) -> Response:
    return await handle_ask(request, DIALECT)
