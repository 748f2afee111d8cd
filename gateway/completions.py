"""Legacy OpenAI completions: ``POST /v1/completions`` (also ``/completions``), one prompt only.

A list of several prompts, or token ids, is refused rather than answered for the first one.
``suffix`` (insertion) and ``echo`` would change what the answer means, so they are refused too.
Streamed as ``text_completion`` chunks; the last one carries ``bench``, then ``data: [DONE]``.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from benchwarmers_mcp.context import Context
from benchwarmers_mcp.engine import report
from benchwarmers_mcp.engine.panel import PanelRun
from benchwarmers_mcp.errors import BadRequest, BenchError, Unsupported
from benchwarmers_mcp.gateway import face, options, retry
from benchwarmers_mcp.gateway.face import Dialect, handle_ask
from benchwarmers_mcp.gateway.openai_chat import usage_body
from benchwarmers_mcp.gateway.sse import SSE_HEADERS, sse
from benchwarmers_mcp.inbound import error_body, guarded
from benchwarmers_mcp.messages import Ask, Message, Text
from benchwarmers_mcp.streamed import Streamed

SAMPLING = {name: name for name in ("max_tokens", "temperature", "top_p", "stop", "seed", "presence_penalty",
                                    "frequency_penalty", "n")}


def parse_prompt(raw: Any) -> str:
    if isinstance(raw, list):
        if len(raw) == 1 and isinstance(raw[0], str):
            raw = raw[0]
        elif raw and all(isinstance(t, int) and not isinstance(t, bool) for t in raw):
            raise Unsupported("prompt as token ids is not supported; send the prompt as text")
        elif len(raw) > 1:
            raise Unsupported("more than one prompt is not supported: a panel answers one prompt per request")
    if not isinstance(raw, str) or not raw:
        raise BadRequest("prompt must be a non-empty string")
    return raw


def parse(body: dict[str, Any], key_name: str = "local") -> Ask:
    collection, reply, nominees = face.named(body, body.get("model"))
    prompt = parse_prompt(body.get("prompt"))
    if body.get("suffix"):
        raise Unsupported("suffix (insertion) is not supported on a panel; send the whole prompt")
    if body.get("echo") is True:
        raise Unsupported("echo is not supported on a panel; the answer never repeats the prompt")
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise BadRequest("stream must be true or false")
    return Ask(collection=collection, messages=(Message("user", (Text(prompt),)),),
               reply=reply, with_=nominees, stream=stream,
               options=options.pick(body, SAMPLING), model_name=str(body["model"]),
               key_name=key_name)


class Chunks:
    def __init__(self, model: str) -> None:
        self.id = f"cmpl-{secrets.token_hex(12)}"
        self.created = int(time.time())
        self.model = model

    def body(self, text: str, finish: str | None, **extra: Any) -> dict[str, Any]:
        return {"id": self.id, "object": "text_completion", "created": self.created, "model": self.model,
                "choices": [{"text": text, "index": 0, "logprobs": None, "finish_reason": finish}], **extra}


def _usage(run: PanelRun, ask: Ask, text: str) -> dict[str, int]:
    return usage_body(face.panel_usage(run, ask, text))


async def stream_panel(run: PanelRun, ask: Ask, keepalive: float) -> AsyncIterator[bytes]:
    out = Chunks(ask.model_name)
    sent: list[str] = []
    try:
        async for frame in face.framed(run, keepalive, lambda piece: sse(out.body(piece, None)), sent):
            yield frame
        yield sse(out.body("", "stop", usage=_usage(run, ask, "".join(sent)), bench=report.panel_bench(run)))
    except Exception as e:
        yield sse(error_body(face.as_bench_error(e)))
    yield b"data: [DONE]\n\n"


def respond(run: PanelRun, ask: Ask, body: dict[str, Any], ctx: Context, overhead_ms: float) -> Response:
    headers = face.reply_headers(run, overhead_ms)
    if ask.stream:
        return Streamed(stream_panel(run, ask, ctx.settings.keepalive), media_type="text/event-stream",
                        headers={**SSE_HEADERS, **headers})
    text = report.content(run)
    reply = Chunks(ask.model_name).body(text, "stop", usage=_usage(run, ask, text), bench=report.panel_bench(run))
    return JSONResponse(reply, headers=headers)


def render_error(error: BenchError) -> Response:
    return JSONResponse(error_body(error), status_code=error.status, headers=retry.headers_for(error))


DIALECT = Dialect("completions", parse, respond, render_error)


@guarded(render_error)
async def completions(request: Request) -> Response:
    return await handle_ask(request, DIALECT)
