"""A fake Ollama runtime (``POST /api/chat``), built from wire-formats.md section 7: NDJSON with no
blank lines, a final ``done: true`` object with ``prompt_eval_count``/``eval_count``, errors as
``{"error": "..."}`` (also as one NDJSON line mid-stream, with no ``done``), streaming by default
when ``stream`` is absent. It refuses ``data:`` URLs in ``images`` (Ollama wants raw base64),
tool-call arguments that are not objects, and unknown roles.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.fakes.native import NativeFake, Reply, delay, pieces


def problems(body: dict[str, Any]) -> str | None:
    for m in body.get("messages", []):
        if m.get("role") not in ("system", "user", "assistant", "tool"):
            return f"invalid role {m.get('role')!r}"
        if any(str(i).startswith("data:") for i in m.get("images") or []):
            return "illegal base64 data at input byte 4"
        for call in m.get("tool_calls") or []:
            if not isinstance(call.get("function", {}).get("arguments"), dict):
                return "json: cannot unmarshal string into Go struct field .arguments"
    return None


def prompt_of(body: dict[str, Any]) -> str:
    return " ".join(m.get("content", "") for m in body.get("messages", []) if m.get("role") == "user")


class FakeOllama(NativeFake):
    def app(self) -> Starlette:
        return Starlette(routes=[Route("/api/chat", self.chat, methods=["POST"])])

    async def chat(self, request: Request) -> Response:
        body, prompt, call = await self.received(request, prompt_of)
        model = call.model
        if problem := problems(body):
            call.status = 400
            return JSONResponse({"error": problem}, 400)
        fail = await delay(model)
        if fail in ("404", "429", "500"):
            name = self.failed(call, int(fail))
            message = f"model '{name}' not found" if fail == "404" else f"fake {fail} for {name}"
            return JSONResponse({"error": message}, int(fail))
        reply = self.reply_for(model, call, prompt)
        final = {"model": model, "created_at": "2026-01-01T00:00:00Z", "done": True, "done_reason": "stop",
                 "total_duration": 1000, "prompt_eval_count": call.tokens_in, "eval_count": call.tokens_out}
        if body.get("stream") is False:
            return JSONResponse({**final, "message": self.message(reply, reply.text, reply.thinking)},
                                headers=self.headers)
        return StreamingResponse(self.lines(model, reply, final, fail == "midstream"), headers=self.headers,
                                 media_type="application/x-ndjson")

    @staticmethod
    def message(reply: Reply, text: str, thinking: str = "", calls: bool = True) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if thinking:
            message["thinking"] = thinking
        if calls and reply.tool_calls:
            message["tool_calls"] = [{"function": {"name": n, "arguments": a}} for _i, n, a in reply.tool_calls]
        return message

    async def lines(self, model: str, reply: Reply, final: dict[str, Any], cut: bool):
        def line(data: dict[str, Any]) -> bytes:
            return (json.dumps(data) + "\n").encode()

        head = {"model": model, "created_at": "2026-01-01T00:00:00Z", "done": False}
        if reply.thinking:
            yield line({**head, "message": self.message(reply, "", reply.thinking, calls=False)})
        for piece in pieces(reply.text):
            yield line({**head, "message": self.message(reply, piece, calls=False)})
            if cut:
                yield line({"error": "an error was encountered while running the model"})
                return
        if reply.tool_calls:
            yield line({**head, "message": self.message(reply, "")})
        yield line({**final, "message": {"role": "assistant", "content": ""}})
