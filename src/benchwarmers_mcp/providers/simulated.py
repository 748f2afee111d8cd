"""Simulated models: deterministic, local, no network. Used by ``benchwarmers demo`` and tests.

The served name picks the persona and its behaviour, query-string style::

    sage                         answers at once
    sage?latency=1.5             answers after 1.5 s
    flaky?fail=429               fails like an upstream: 429, 500, 404 (gone), 401 (auth), timeout, empty
    caller?tool=1                calls the first offered tool once, then answers from its result
    judge?say=no-fault           a scripted answer (the suite's fake models): no-fault, line1, short,
                                 true, false, refuse, notice

Every answer says it is simulated, so nobody mistakes it for a model's work (the scripted ``say``
answers too, but for ``short``, ``refuse`` and ``notice``, whose whole point is their exact words).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator
from urllib.parse import parse_qs

import anyio

from benchwarmers_mcp.errors import AuthOrBilling, ModelGone, RateLimited, UpstreamFailure, UpstreamTimeout
from benchwarmers_mcp.messages import (
    Answer,
    Finish,
    ModelRequest,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
    estimate_text_tokens,
)
from benchwarmers_mcp.providers.base import Connection

OPENINGS = (
    "Looking at this closely,",
    "Short version:",
    "Two things stand out.",
    "Here is my reading.",
    "I would start here:",
)
CLAIMS = (
    "the happy path is fine, but the error branch is never exercised",
    "the cache can serve a stale value after a concurrent refresh",
    "an off-by-one hides in the loop bound",
    "the retry loop has no upper bound",
    "the names are clear and the structure holds up",
)


SCRIPTED = {
    "no-fault": "NO FAULT\nI read every line and nothing in it misbehaves (a scripted, simulated answer).",
    "line1": "FAULT: line 1\nThe first line is where it goes wrong (a scripted, simulated answer).",
    "short": "NO FAULT",
    "true": "VERDICT: TRUE\nThe quoted lines say so plainly (a scripted, simulated answer).",
    "false": "VERDICT: FALSE\nThe quoted lines say otherwise (a scripted, simulated answer).",
    "refuse": "I'm sorry, but I can't help with that request.",
    "notice": "You are out of credits. Add credits to keep using this model.",
}


def parse_persona(served: str) -> tuple[str, dict[str, str]]:
    name, _, query = served.partition("?")
    return name.rsplit("/", 1)[-1], {k: v[-1] for k, v in parse_qs(query).items()}


def _fail(mode: str, name: str) -> None:
    if mode == "429":
        raise RateLimited(f"upstream 429: {name} is rate limited (simulated)", upstream_status=429, retry_after=60)
    if mode == "500":
        raise UpstreamFailure(f"upstream 500: {name} had an internal error (simulated)", upstream_status=500)
    if mode in ("404", "gone"):
        raise ModelGone(f"upstream 404: no such model {name} (simulated)", upstream_status=404)
    if mode in ("401", "auth"):
        raise AuthOrBilling(f"upstream 401: key refused for {name} (simulated)", upstream_status=401)


class Simulated:
    def __init__(self, connection: Connection) -> None:
        self.conn = connection

    async def _answer(self, request: ModelRequest) -> Answer:
        name, opts = parse_persona(request.model)
        await anyio.sleep(float(opts.get("latency", "0") or 0))
        mode = opts.get("fail", "")
        _fail(mode, name)
        if mode == "timeout":
            await anyio.sleep(float(opts.get("hang", "3600")))
            raise UpstreamTimeout(f"{name} did not answer (simulated)")
        prompt = "\n".join(m.text for m in request.messages)
        usage = Usage(estimate_text_tokens((request.system or "") + prompt), 0, estimated=True)
        if mode == "empty":
            return Answer("", usage=usage)
        if opts.get("say") in SCRIPTED:
            text = SCRIPTED[opts["say"]]
            return Answer(text, usage=Usage(usage.input_tokens, estimate_text_tokens(text), estimated=True))
        last = request.messages[-1] if request.messages else None
        if opts.get("tool") and request.tools and not (last and last.tool_results):
            tool = request.tools[0]
            call = ToolCall(f"call_sim_{hashlib.sha256(prompt.encode()).hexdigest()[:8]}", tool.name, "{}")
            return Answer("", (call,), usage=usage, finish_reason="tool_calls")
        if last and last.tool_results:
            text = f"{name} (simulated) read the tool result: {last.tool_results[0].content[:200]}"
        else:
            digest = int(hashlib.sha256(f"{name}|{prompt}".encode()).hexdigest(), 16)
            first_line = next((line for line in prompt.splitlines() if line.strip()), "")[:80]
            claim = CLAIMS[(digest // 7) % len(CLAIMS)]
            text = (f"{OPENINGS[digest % len(OPENINGS)]} {claim[0].upper()}{claim[1:]}. "
                    f"(Simulated answer from {name} to: \"{first_line}\")")
        return Answer(text, usage=Usage(usage.input_tokens, estimate_text_tokens(text), estimated=True))

    async def complete(self, request: ModelRequest) -> Answer:
        return await self._answer(request)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        answer = await self._answer(request)
        for i, call in enumerate(answer.tool_calls):
            yield ToolCallDelta(i, call.id, call.name, call.arguments)
        words = answer.text.split(" ")
        for i, word in enumerate(words):
            yield TextDelta(word if i == 0 else " " + word)
        yield Finish(answer.finish_reason, answer.usage)


def demo_served_names() -> list[tuple[str, str]]:
    """The five models of ``benchwarmers demo``: (served name, role)."""
    return [
        ("simulated/sage?latency=0.4", "general"),
        ("simulated/quill?latency=0.8", "general"),
        ("simulated/ferret?latency=1.2", "code"),
        ("simulated/lark?latency=0.6", "general"),
        ("simulated/mole?latency=1.6", "general"),
    ]


def describe(served: str) -> str:
    name, opts = parse_persona(served)
    return json.dumps({"persona": name, **opts})
