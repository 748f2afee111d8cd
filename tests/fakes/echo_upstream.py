"""A fake OpenAI-compatible upstream that echoes back what it was sent: the key (from whichever
header carried it) and the endpoint's own header values, in every place an upstream's text can
reach the gateway. The served model name picks where:

``whole`` (the answer text, its reasoning and a tool call's arguments), ``stream`` (the same,
streamed, the key cut across pieces), ``e400`` / ``e401`` / ``e404`` / ``e429`` / ``e500`` (an
error body, with the key in a header too; the 400 states the model's context window), ``midway`` (half an answer, then an SSE error event naming the key),
``redirect`` (a Location on a host named after the key), ``badline`` (a stream line that is not
JSON), ``crash`` (a tool call whose index is the key: the provider fails on it with the key in its
exception, which a log's traceback then shows). ``GET /v1/models`` lists a model named after the key, or (``listing_fails``) refuses with
the key in its body. ``spell`` says how it spells each secret it echoes: as sent, or (a test's
choice) re-cased or cut to runs of it, which ``leaks`` finds all the same.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

ECHO_KEY = "sk-echo-4F8a1C2e9B7d6A5f3E2d1C0b"  # the key a test gives the gateway for the echoing endpoint
ECHO_ORG = "org-echo-7c6b5a4938271605"  # a value of the endpoint's own headers
BEHAVIOURS = ("whole", "stream", "e400", "e401", "e404", "e429", "e500", "midway", "redirect", "badline")
RATE_HEADERS = {"x-ratelimit-limit-requests": "2", "x-ratelimit-remaining-requests": "0",
                "x-ratelimit-reset-requests": "2s"}


RUN = 12  # any run this long of a secret, in any case, is a leak


def leaks(text: str, secrets: tuple[str, ...] = (ECHO_KEY, ECHO_ORG)) -> list[str]:
    """Every run of ``RUN`` characters of a secret found in ``text``, in any case (the whole secret,
    cut short at either end, from its middle, upper-cased...)."""
    folded = text.lower()
    return sorted({run for secret in secrets for i in range(len(secret) - RUN + 1)
                   if (run := secret[i:i + RUN].lower()) in folded})


def raw_store(home: Path) -> bytes:
    """The data folder's database files as bytes: the database, its WAL and its shared memory."""
    return b"".join(p.read_bytes() for p in sorted(home.glob("benchwarmers.db*")))


def sent_key(request: Request) -> str:
    auth = request.headers.get("authorization", "")
    return (auth.removeprefix("Bearer ") or request.headers.get("x-api-key") or request.headers.get("x-goog-api-key")
            or request.query_params.get("key") or "")


def halves(text: str) -> tuple[str, str]:
    return text[: len(text) // 2], text[len(text) // 2:]


@dataclass
class EchoUpstream:
    echo_headers: tuple[str, ...] = ("x-org",)  # header values it echoes, besides the key
    # how it spells each secret it echoes: as sent, or re-cased, or cut to runs of it, by a test
    spell: Callable[[str], str] = field(default=lambda secret: secret)
    listing_fails: bool = False
    models_seen: list[str] = field(default_factory=list)

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/chat/completions", self.chat, methods=["POST"]),
                                 Route("/v1/models", self.models, methods=["GET"])])

    def _key(self, request: Request) -> str:
        return self.spell(sent_key(request))

    def _secret(self, request: Request) -> str:
        extra = " ".join(self.spell(request.headers.get(h, "")) for h in self.echo_headers)
        return f"{self._key(request)} {extra}".strip()

    async def models(self, request: Request) -> Response:
        secret = self._secret(request)
        if self.listing_fails:
            return JSONResponse({"error": {"message": f"key {secret} may not list models"}}, status_code=403,
                                headers={"x-echo": secret})
        key = self._key(request)
        return JSONResponse({"data": [{"id": "echo-whole"}, {"id": f"leaky-{key}", "note": secret}]})

    async def chat(self, request: Request) -> Response:
        body = await request.json()
        model = str(body.get("model", ""))
        self.models_seen.append(model)
        secret, key = self._secret(request), self._key(request)
        echo = {"x-echo": secret}
        if model.startswith("e4") or model.startswith("e5"):
            status = int(model[1:4])
            headers = {**echo, **(RATE_HEADERS if status == 429 else {})}
            said = (f"This model's maximum context length is 8192 tokens (sent with {secret})" if status == 400
                    else f"Incorrect API key provided: {secret}")  # a 400 that teaches a fact, with the key
            return JSONResponse({"error": {"message": said, "code": str(status)}}, status_code=status, headers=headers)
        if model == "redirect":
            return Response(status_code=307, headers={"location": f"https://{key.lower()}.evil.test/v1", **echo})
        if model == "badline":
            return StreamingResponse(self._lines([f"data: not json {secret}\n\n"]), media_type="text/event-stream",
                                     headers=echo)
        if model == "midway":
            return StreamingResponse(self._lines([
                self._chunk({"content": "The first half"}),
                f"data: {json.dumps({'error': {'message': f'stream died; your key was {secret}'}})}\n\n"]),
                media_type="text/event-stream", headers=echo)
        arguments = json.dumps({"token": key, "note": "echo"})
        if model == "crash":
            message = {"role": "assistant", "content": "", "tool_calls": [
                {"index": key, "id": "call_1", "type": "function", "function": {"name": "save", "arguments": "{}"}}]}
            return JSONResponse({"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]})
        if not body.get("stream"):
            message = {"role": "assistant", "content": f"You sent me {secret}.", "reasoning_content": f"it is {key}",
                       "tool_calls": [{"id": "call_1", "type": "function",
                                       "function": {"name": "save", "arguments": arguments}}]}
            return JSONResponse({"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
                                 "usage": {"prompt_tokens": 3, "completion_tokens": 5}}, headers=echo)
        return StreamingResponse(self._lines(self._stream(secret, key, arguments)), media_type="text/event-stream",
                                 headers=echo)

    @staticmethod
    def _chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        data = {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return f"data: {json.dumps(data)}\n\n"

    def _stream(self, secret: str, key: str, arguments: str) -> list[str]:
        first, second = halves(key)
        a1, a2 = arguments[: arguments.index(key) + len(key) // 3], arguments[arguments.index(key) + len(key) // 3:]
        pieces = [self._chunk({"reasoning_content": f"thinking about {first}"}),
                  self._chunk({"reasoning_content": f"{second} now"}),
                  self._chunk({"content": f"You sent me {first}"}), self._chunk({"content": second}),
                  self._chunk({"content": " and then "})]
        pieces += [self._chunk({"content": c}) for c in secret]  # one character a piece
        pieces += [self._chunk({"content": ". Done s"}),
                   self._chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                                "function": {"name": "save", "arguments": a1}}]}),
                   self._chunk({"tool_calls": [{"index": 0, "function": {"arguments": a2}}]}),
                   self._chunk({}, "tool_calls"), "data: [DONE]\n\n"]
        return pieces

    @staticmethod
    async def _lines(lines: list[str]) -> AsyncIterator[bytes]:
        for line in lines:
            yield line.encode()
