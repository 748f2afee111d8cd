"""Shared helpers for the security tests: the app in-process with its lifespan, route families,
and a comparison of error shapes that ignores the words."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx

from benchwarmers_mcp.app import create_app
from benchwarmers_mcp.errors import BenchError
from benchwarmers_mcp.gateway.shapes import render_error_for
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import collections as collection_store
from benchwarmers_mcp.store import endpoints, models
from benchwarmers_mcp.store.collections import Collection
from benchwarmers_mcp.store.endpoints import Endpoint
from benchwarmers_mcp.store.models import ModelRecord
from tests.kits.store import store_of

ADMIN_TOKEN = "adm-" + "T0k3n-for-tests-only-9f2c"  # 29 characters, above the 16 floor
UPSTREAM_KEY = "sk-upstream-" + "Zq81xLmP0aR7vT2wQe5"
PROMPT_MARK = "PROMPT-MARK-" + "7c1e0d"
PROMPT = [{"role": "user", "content": f"{PROMPT_MARK}: where can this return a stale value?"}]

# One path per route family: (family, path). Refusals happen before routing, so each family is
# guarded whether or not its face is installed yet.
FAMILIES = [
    ("openai", "/v1/chat/completions"),
    ("responses", "/v1/responses"),
    ("anthropic", "/v1/messages"),
    ("gemini", "/v1beta/models/core:generateContent"),
    ("ollama", "/api/chat"),
    ("bench", "/bench/verdict"),
    ("mcp", "/mcp"),
    ("admin", "/api/gateway-key"),
    ("dashboard", "/ui/"),
]


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@asynccontextmanager
async def app_client(settings: Settings, **overrides: Any) -> AsyncIterator[httpx.AsyncClient]:
    """The app with its lifespan entered, reached through httpx's ASGI transport as 127.0.0.1:<port>."""
    settings = replace(settings, **overrides) if overrides else settings
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=f"http://127.0.0.1:{settings.port}") as client:
            client.asgi_app = app  # type: ignore[attr-defined]
            yield client


async def raw_asgi(app: Any, method: str, path: str, headers: list[tuple[bytes, bytes]],
                   body: bytes = b"") -> tuple[int, bytes]:
    """One request straight to the ASGI app, with the path exactly as given (no client folds it)."""
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
             "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
             "root_path": "", "headers": headers, "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8122)}
    sent: list[dict] = []
    messages = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> dict:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        sent.append(message)

    await app(scope, receive, send)
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    return status, b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


def skeleton(value: Any) -> Any:
    """A JSON value with its leaves replaced by their types: the shape, not the words."""
    if isinstance(value, dict):
        return {k: skeleton(v) for k, v in value.items()}
    if isinstance(value, list):
        return [skeleton(v) for v in value]
    return type(value).__name__


def expected_shape(path: str, error: BenchError) -> Any:
    """What the route's own renderer makes of this error, as a skeleton."""
    return skeleton(json.loads(render_error_for(path, error).body))


def same_shape(response: httpx.Response, path: str, error: BenchError) -> bool:
    return skeleton(response.json()) == expected_shape(path, error)


async def seed_fake(home: Path, base_url: str) -> None:
    """One endpoint ``fake`` (keyed by ``BENCHWARMERS_KEY_FAKE``) with ``alpha``, the one member of ``core``."""
    async with store_of(home) as db:
        await endpoints.add(db, Endpoint("fake", base_url, key_name="fake"))
        await models.register(db, ModelRecord("alpha", "alpha", "fake", family="alpha"))
        await collection_store.save(db, Collection("core", ("alpha",), "the core panel"))
