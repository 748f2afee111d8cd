"""What the suite's tests share: a hand-built engine context over a fake upstream, models on it,
the app in-process with its lifespan, and waiting for a run to end."""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx

from benchwarmers_mcp.app import create_app
from benchwarmers_mcp.context import Context
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import Database, endpoints, models
from benchwarmers_mcp.store import suite as suite_store
from benchwarmers_mcp.store.endpoints import Endpoint
from benchwarmers_mcp.store.models import ModelRecord, family_of
from benchwarmers_mcp.upstream.caller import ModelCaller, PacingPolicy
from benchwarmers_mcp.upstream.keys import KeyStore

Reply = Callable[[str, str, int], httpx.Response]  # (model, prompt, how many times this prompt came) -> response


def chat_reply(model: str, text: str) -> httpx.Response:
    return httpx.Response(200, json={
        "id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})


@dataclass
class FakeUpstream:
    """An OpenAI-compatible upstream behind ``httpx.MockTransport`` that counts every prompt it is sent."""

    reply: Reply
    seen: Counter[tuple[str, str]] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def handler(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        prompt = "\n".join(str(m.get("content")) for m in body["messages"] if m.get("role") == "user")
        with self.lock:
            self.seen[body["model"], prompt] += 1
            times = self.seen[body["model"], prompt]
        return self.reply(body["model"], prompt, times)

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handler)


@asynccontextmanager
async def engine(settings: Settings, transport: httpx.AsyncBaseTransport | None = None,
                 policy: PacingPolicy | None = None) -> AsyncIterator[Context]:
    """What the app's lifespan builds, by hand, so a test can choose the upstream and stop it at will."""
    settings.home.mkdir(parents=True, exist_ok=True)
    async with Database(settings.store_target) as db, httpx.AsyncClient(transport=transport) as client:
        keys = KeyStore(settings.config_dir, settings.env_keys)
        async with anyio.create_task_group() as tg:
            yield Context(settings=settings, db=db, keys=keys, client=client,
                          caller=ModelCaller(db, keys, client, policy), tg=tg, route_tuning=None)
            tg.cancel_scope.cancel()


async def add_models(db: Database, served: dict[str, str], *, endpoint: str = "fake", api: str = "chat",
                     base: str = "http://upstream.test/v1") -> None:
    if endpoint not in {e.name for e in await endpoints.list_all(db)}:
        kind = "simulated" if api == "simulated" else "provider"
        await endpoints.add(db, Endpoint(endpoint, base if api != "simulated" else "simulated://local", api=api,
                                         kind=kind))
    for alias, name in served.items():
        await models.register(db, ModelRecord(alias, name, endpoint, family_of(alias)))


async def wait_run(db: Database, run: int, limit: float = 60.0) -> dict[str, Any]:
    with anyio.fail_after(limit):
        while True:
            row = await suite_store.run_row(db, run)
            if row["state"] != "running":
                return row
            await anyio.sleep(0.05)


@asynccontextmanager
async def app_client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    """The app with its lifespan entered (so runs resume), reached in-process as 127.0.0.1."""
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=f"http://127.0.0.1:{settings.port}") as client:
            yield client


async def wait_api_run(client: httpx.AsyncClient, run: int, limit: float = 60.0) -> dict[str, Any]:
    with anyio.fail_after(limit):
        while True:
            reply = (await client.get("/api/suite/run", params={"id": run})).json()
            if reply["run"]["state"] != "running":
                return dict(reply)
            await anyio.sleep(0.05)
