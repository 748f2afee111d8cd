"""A fake OpenAI-compatible upstream: a real HTTP server for end-to-end tests.

The served model name picks the behaviour, query-string style (the same grammar as the
simulated provider): ``alpha``, ``slow?latency=1.5``, ``bad?fail=429`` (also 500, 404, 401),
``quiet?fail=empty``, ``stuck?fail=hang``, ``cut?fail=midway`` (half an answer, then an error in
the stream), ``drip?pause=2`` (streams its first piece, then stalls); ``window=6m`` reports, on a
whole reply or a 429, a requests window used up that resets then (``x-ratelimit-*-requests``). ``script`` queues exact replies per model for tool-calling tests; ``responders``
makes each reply from the request (for clients that send side requests). Every call is counted
with its tokens, so the ledger can be checked.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route


@dataclass
class Call:
    model: str
    body: dict[str, Any]
    headers: dict[str, str]
    tokens_in: int = 0
    tokens_out: int = 0
    status: int = 200
    at: float = field(default_factory=time.time)  # when it arrived (its body read), by the fake's own clock


@dataclass
class FakeUpstream:
    calls: list[Call] = field(default_factory=list)
    script: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))
    responders: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = field(default_factory=dict)
    served: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, model: str | None = None) -> int:
        return sum(1 for c in self.calls if model is None or c.model == model)

    def app(self) -> Starlette:
        return Starlette(routes=[
            Route("/v1/chat/completions", self.chat, methods=["POST"]),
            Route("/v1/models", self.models, methods=["GET"]),
        ])

    async def models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": m, "object": "model", "owned_by": "fake"}
                                                        for m in self.served]})

    async def chat(self, request: Request) -> Response:
        body = await request.json()
        model = body.get("model", "")
        name, _, query = model.partition("?")
        opts = {k: v[-1] for k, v in parse_qs(query).items()}
        prompt = " ".join(str(m.get("content")) for m in body.get("messages", []) if m.get("role") == "user")
        call = Call(model, body, dict(request.headers), tokens_in=max(1, len(prompt) // 4))
        with self.lock:
            self.calls.append(call)
        await asyncio.sleep(float(opts.get("latency", 0)))
        fail = opts.get("fail")
        window = {"x-ratelimit-limit-requests": "10", "x-ratelimit-remaining-requests": "0",
                  "x-ratelimit-reset-requests": opts["window"]} if "window" in opts else {}
        if fail in ("429", "500", "404", "401", "503"):
            call.status, call.tokens_in = int(fail), 0
            headers = {"retry-after": "30", **window} if fail == "429" else {}
            return JSONResponse({"error": {"message": f"fake {fail} for {name}", "type": "fake", "code": fail}},
                                status_code=int(fail), headers=headers)
        if fail == "hang":  # until the caller gives up, so that shutting the fake down never waits on it
            while (await request.receive())["type"] != "http.disconnect":
                pass
            return Response(status_code=499)
        if fail == "midway":
            return StreamingResponse(self._midway(model), media_type="text/event-stream")
        scripted = self.script.get(model)
        if model in self.responders:
            message = self.responders[model](body)
        elif scripted:
            message = scripted.pop(0)
        elif fail == "empty":
            message = {"role": "assistant", "content": ""}
        else:
            message = {"role": "assistant", "content": f"answer from {name}: {prompt[:60]}"}
        text = message.get("content") or ""
        call.tokens_out = max(0, len(text) // 4) + 1
        usage = {"prompt_tokens": call.tokens_in, "completion_tokens": call.tokens_out,
                 "total_tokens": call.tokens_in + call.tokens_out}
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        if not body.get("stream"):
            return JSONResponse({"id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
                                 "model": model, "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                                 "usage": usage}, headers=window)
        return StreamingResponse(self._stream(model, message, usage, finish, float(opts.get("pause", 0))),
                                 media_type="text/event-stream")

    async def _stream(self, model: str, message: dict[str, Any], usage: dict[str, int], finish: str,
                      pause: float = 0.0):
        def chunk(delta: dict[str, Any], reason: str | None = None, **extra: Any) -> bytes:
            data = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": reason}], **extra}
            return f"data: {json.dumps(data)}\n\n".encode()

        yield chunk({"role": "assistant", "content": ""})
        text = message.get("content") or ""
        for i in range(0, len(text), 16):
            yield chunk({"content": text[i:i + 16]})
            await asyncio.sleep(pause if i == 0 else 0)  # ``pause=<s>``: a member that stalls mid-answer
        for i, call in enumerate(message.get("tool_calls") or []):
            fn = call["function"]
            yield chunk({"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                         "function": {"name": fn["name"], "arguments": ""}}]})
            yield chunk({"tool_calls": [{"index": i, "function": {"arguments": fn["arguments"]}}]})
        yield chunk({}, finish)
        yield f"data: {json.dumps({'id': 'x', 'object': 'chat.completion.chunk', 'choices': [], 'usage': usage})}\n\n".encode()
        yield b"data: [DONE]\n\n"

    async def _midway(self, model: str):
        piece = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": model,
                 "choices": [{"index": 0, "delta": {"content": "The first half"}, "finish_reason": None}]}
        yield f"data: {json.dumps(piece)}\n\n".encode()
        yield f"data: {json.dumps({'error': {'message': 'fake upstream died part way', 'type': 'fake'}})}\n\n".encode()


def create_app() -> Starlette:
    """For ``uvicorn --factory`` (benchmarks run the fake in its own process)."""
    return FakeUpstream().app()
