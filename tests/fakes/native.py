"""What the native-API fakes (Anthropic, Gemini, Ollama, Responses) share: the call log, the
behaviour grammar of served names, scripted replies and token counts.

Served names work as in the OpenAI fake: ``alpha``, ``slow?latency=1.5``, ``bad?fail=429`` (also
500, 503, 529, 404, 401, 402), ``stuck?fail=hang``, ``quiet?fail=empty``, ``cut?fail=midstream``
(an in-band error after the first piece of a stream). ``script[model]`` queues replies:
``Reply(text=..., tool_calls=[("call_1", "name", {"a": 1})], thinking=...)``. ``headers`` are sent
on every answer (rate-limit headers, for the quota tests).
"""

from __future__ import annotations

import asyncio
import threading
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from starlette.requests import Request


@dataclass
class Reply:
    text: str = ""
    tool_calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    thinking: str = ""


@dataclass
class Call:
    model: str
    body: dict[str, Any]
    headers: dict[str, str]
    path: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    reasoning: int = 0
    status: int = 200


@dataclass
class NativeFake:
    calls: list[Call] = field(default_factory=list)
    script: dict[str, list[Reply]] = field(default_factory=lambda: defaultdict(list))
    headers: dict[str, str] = field(default_factory=dict)
    key: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, model: str | None = None) -> int:
        return sum(1 for c in self.calls if model is None or c.model == model)

    def answered(self) -> list[Call]:
        return [c for c in self.calls if c.status == 200]

    def log(self, model: str, body: dict[str, Any], headers: dict[str, str], path: str, prompt: str) -> Call:
        call = Call(model, body, headers, path, tokens_in=max(1, len(prompt) // 4))
        with self.lock:
            self.calls.append(call)
        return call

    async def received(self, request: Request, prompt_of: Callable[[dict[str, Any]], str],
                       model: str | None = None) -> tuple[dict[str, Any], str, Call]:
        """Read and log one request: its body, the user's prompt and the call record (the model
        from the body unless the path names it)."""
        body = await request.json()
        prompt = prompt_of(body)
        model = body.get("model", "") if model is None else model
        return body, prompt, self.log(model, body, dict(request.headers), request.url.path, prompt)

    @staticmethod
    def failed(call: Call, status: int) -> str:
        """Record a refused call (no tokens counted); the served name, for the error message."""
        call.status, call.tokens_in = status, 0
        return behaviour(call.model)[0]

    def reply_for(self, model: str, call: Call, prompt: str) -> Reply:
        name, opts = behaviour(model)
        scripted = self.script.get(model)
        if scripted:
            reply = scripted.pop(0)
        elif opts.get("fail") == "empty":
            reply = Reply("")
        else:
            reply = Reply(f"answer from {name}: {prompt[:60]}")
        call.tokens_out = len(reply.text) // 4 + 1
        return reply


def behaviour(model: str) -> tuple[str, dict[str, str]]:
    name, _, query = model.partition("?")
    return name, {k: v[-1] for k, v in parse_qs(query).items()}


async def delay(model: str) -> str | None:
    """Sleep for ``latency``; returns the failure mode, hanging for ``hang``."""
    _, opts = behaviour(model)
    await asyncio.sleep(float(opts.get("latency", 0)))
    if opts.get("fail") == "hang":
        await asyncio.sleep(3600)
    return opts.get("fail")


def pieces(text: str, size: int = 12) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]
