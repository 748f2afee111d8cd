"""Shared pieces of the health, scheduler and onboarding tests (no tests here): a clock moved by
hand, a scripted upstream for every API (``httpx.MockTransport``) that keeps each request body, an
engine context built by hand on it, and the app itself in-process (``create_app`` with its clock
and upstream seams, lifespan run) with a client that reaches it."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import httpx
from starlette.applications import Starlette

from benchwarmers_mcp.app import create_app
from benchwarmers_mcp.context import Context
from benchwarmers_mcp.health.onboarding import Onboarding
from benchwarmers_mcp.scheduler import Scheduler
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import Database, endpoints, models
from benchwarmers_mcp.store.endpoints import Endpoint
from benchwarmers_mcp.store.models import ModelRecord
from benchwarmers_mcp.upstream.caller import ModelCaller
from benchwarmers_mcp.upstream.keys import KeyStore
from benchwarmers_mcp.upstream.pacing import PacingPolicy

DAY = 86400.0


class ManualClock:
    """Time moves only when a test says so; ``sleep`` waits for that."""

    def __init__(self, start: float | None = None) -> None:
        self.tz = UTC
        self._now = time.time() + 5.0 if start is None else start  # a little ahead of rows stamped by the real clock
        self._sleepers: list[tuple[float, anyio.Event]] = []
        self._slept = anyio.Event()

    def now(self) -> float:
        return self._now

    async def sleep(self, seconds: float) -> None:
        entry = (self._now + seconds, anyio.Event())
        self._sleepers.append(entry)
        self._slept.set()
        try:
            await entry[1].wait()
        finally:
            if entry in self._sleepers:
                self._sleepers.remove(entry)

    async def advance(self, seconds: float) -> None:
        """Move on, wake who is due, and wait (real time) until each woken loop sleeps again."""
        self._now += seconds
        woken = [e for e in self._sleepers if e[0] <= self._now]
        for e in woken:
            self._sleepers.remove(e)
            e[1].set()
        target = len(self._sleepers) + len(woken)
        with anyio.fail_after(60):
            while len(self._sleepers) < target:
                self._slept = anyio.Event()
                if len(self._sleepers) < target:
                    await self._slept.wait()

    def set(self, moment: float) -> None:
        self._now = moment


def at_utc(clock: ManualClock, hour: int, minute: int = 0, days: int = 0) -> float:
    """The next ``hour:minute`` UTC after the clock's now, ``days`` later."""
    now = datetime.fromtimestamp(clock.now(), UTC)
    moment = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
    if moment <= now:
        moment += timedelta(days=1)
    return (moment + timedelta(days=days)).timestamp()


Reply = httpx.Response | Exception | Callable[[dict[str, Any]], httpx.Response]


def answer_for(api: str, text: str = "ready", *, reasoning: str = "", tool: str | None = None) -> httpx.Response:
    """A plain answer in the API's own shape."""
    if api == "anthropic":
        content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        return httpx.Response(200, json={"type": "message", "content": content, "stop_reason": "end_turn",
                                         "usage": {"input_tokens": 5, "output_tokens": 2}})
    if api == "gemini":
        return httpx.Response(200, json={"candidates": [{"content": {"parts": [{"text": text}]}, "finishReason": "STOP"}],
                                         "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 2}})
    if api == "ollama":
        return httpx.Response(200, json={"message": {"role": "assistant", "content": text}, "done": True,
                                         "done_reason": "stop", "prompt_eval_count": 5, "eval_count": 2})
    if api == "responses":
        return httpx.Response(200, json={"status": "completed", "output": [
            {"type": "message", "content": [{"type": "output_text", "text": text}]}],
            "usage": {"input_tokens": 5, "output_tokens": 2}})
    message: dict[str, Any] = {"content": text}
    if reasoning:
        message["reasoning_content"] = reasoning
    if tool:
        message["tool_calls"] = [{"id": "c1", "type": "function", "function": {"name": tool, "arguments": "{}"}}]
    return httpx.Response(200, json={"choices": [{"message": message, "finish_reason": "tool_calls" if tool else "stop"}],
                                     "usage": {"prompt_tokens": 5, "completion_tokens": 2}})


def failure(status: int, message: str = "fake failure") -> httpx.Response:
    return httpx.Response(status, json={"error": {"message": message}})


def api_of(path: str) -> str:
    if path.endswith("/messages"):
        return "anthropic"
    if ":generateContent" in path:
        return "gemini"
    if path.endswith("/api/chat"):
        return "ollama"
    if path.endswith("/responses"):
        return "responses"
    return "chat"


@dataclass
class Scripted:
    """Replies queued per served model (then plain answers); listings per host; every body kept."""

    queues: dict[str, list[Reply]] = field(default_factory=dict)
    always: dict[str, Reply] = field(default_factory=dict)
    listing: dict[str, list[str]] = field(default_factory=dict)  # host -> served names
    calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)  # (model, path, body)
    listings: int = 0

    def model_of(self, request: httpx.Request, body: dict[str, Any]) -> str:
        if ":generateContent" in request.url.path:
            return request.url.path.rsplit("/", 1)[-1].split(":")[0]
        return str(body.get("model", ""))

    def handler(self, request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            self.listings += 1
            names = self.listing.get(request.url.host, [])
            if request.url.path.endswith("/api/tags"):
                return httpx.Response(200, json={"models": [{"name": n} for n in names]})
            return httpx.Response(200, json={"data": [{"id": n} for n in names]})
        body = json.loads(request.content)
        model = self.model_of(request, body)
        self.calls.append((model, request.url.path, body))
        queue = self.queues.get(model)
        item: Reply = queue.pop(0) if queue else self.always.get(model) or answer_for(api_of(request.url.path))
        if isinstance(item, Exception):
            raise item
        if callable(item) and not isinstance(item, httpx.Response):
            return item(body)
        return item

    def bodies(self, model: str | None = None) -> list[dict[str, Any]]:
        return [b for m, _, b in self.calls if model is None or m == model]

    def count(self, model: str | None = None) -> int:
        return len(self.bodies(model))


def settings_for(home: Path) -> Settings:
    return Settings.from_env({}, home=home, config_dir=home.parent / "config")


@asynccontextmanager
async def health_ctx(home: Path, upstream: Scripted, clock: ManualClock) -> AsyncIterator[Context]:
    """What the lifespan builds, by hand (no scheduler or worker running): a context over a store in
    ``home`` whose upstream calls go to ``upstream`` and whose clock is ``clock``."""
    settings = settings_for(home)
    async with Database(settings.db_path) as db, httpx.AsyncClient(
            transport=httpx.MockTransport(upstream.handler)) as client, anyio.create_task_group() as tg:
        keys = KeyStore(settings.config_dir, {})
        yield Context(settings=settings, db=db, keys=keys, client=client,
                      caller=ModelCaller(db, keys, client, PacingPolicy(backoff=0.01, retries=0)), tg=tg,
                      clock=clock)
        tg.cancel_scope.cancel()


async def seat(db: Database, endpoint: str, *aliases: str, api: str = "chat", connection: str | None = None,
               base: str | None = None) -> list[ModelRecord]:
    """An endpoint and models on it (alias = served name)."""
    await endpoints.add(db, Endpoint(endpoint, base or f"http://{endpoint}.test/v1", api, connection=connection))
    return [await models.register(db, ModelRecord(models.alias_for(a), a, endpoint, a)) for a in aliases]


@dataclass
class Running:
    """The app in-process: its context (what its lifespan built) and a client that reaches it."""

    app: Starlette
    ctx: Context
    client: httpx.AsyncClient

    @property
    def scheduler(self) -> Scheduler:
        assert isinstance(self.ctx.scheduler, Scheduler)
        return self.ctx.scheduler

    @property
    def worker(self) -> Onboarding:
        assert isinstance(self.ctx.onboarding, Onboarding)
        return self.ctx.onboarding


@asynccontextmanager
async def running_app(settings: Settings, clock: ManualClock,
                      upstream: httpx.AsyncBaseTransport | None = None) -> AsyncIterator[Running]:
    """The real app with its lifespan (scheduler and onboarding worker running), called in-process;
    its upstream calls go to ``upstream`` (nowhere when None: a call would fail)."""
    app = create_app(settings, clock=clock, upstream_transport=upstream or httpx.MockTransport(_nowhere))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=f"http://127.0.0.1:{settings.port}",
                                     timeout=60) as client:
            yield Running(app, app.state.ctx, client)


def _nowhere(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError(f"no upstream in this test: {request.url}", request=request)


async def onboarded(client: httpx.AsyncClient, item: int, limit: float = 30.0) -> dict[str, Any]:
    """The onboarding item once it has finished (its state, alias, log), as ``GET /api/onboarding`` shows it."""
    with anyio.fail_after(limit):
        while True:
            items = {i["id"]: i for i in (await client.get("/api/onboarding")).json()["items"]}
            found = items.get(item)
            if found is not None and found["state"] not in ("queued", "running"):
                return found
            await anyio.sleep(0.02)
