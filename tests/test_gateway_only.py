"""The gateway-only server (``benchwarmers gateway``, issue 31.12): the same app with the route table
filtered to the gateway routes and ``/health``. The client formats and MCP answer (Ollama's
``/api/chat`` and the rest of its names included); every admin route, dashboard page, login and
static file is a 404, whoever asks and whatever credential."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import anyio
import httpx
import openai
import pytest

from benchwarmers_mcp import routes
from benchwarmers_mcp.app import create_app
from benchwarmers_mcp.cli.demo import seed_demo
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import Database
from tests.kits.gateway import openai_sdk
from tests.kits.loopback import Loopback, free_port
from tests.kits.security import ADMIN_TOKEN, bearer

ADMIN_PATHS = sorted({e.path for e in routes.TABLE if e.access == "admin" and "{" not in e.path})
DASHBOARD = ["/", "/ask", "/registered", "/settings", "/login", "/static/app.css", "/static/x/y.js"]


@pytest.fixture
def demo_settings(settings: Settings) -> Settings:
    async def seed() -> None:
        async with Database(settings.store_target) as db:
            await seed_demo(db)
    settings.home.mkdir(parents=True, exist_ok=True)
    anyio.run(seed)
    return settings


@pytest.fixture
def only(demo_settings: Settings, net: Loopback) -> Iterator[str]:
    port = free_port()
    app = create_app(replace(demo_settings, port=port), table=routes.GATEWAY_TABLE)
    base = net.serve(app, port)
    yield base
    net.stop(base)


def test_the_table_is_the_gateway_and_health_only() -> None:
    table = routes.GATEWAY_TABLE
    assert {e.access for e in table} == {"gateway", "open"}
    assert [e.path for e in table if e.access == "open"] == ["/health"]
    assert [e for e in routes.TABLE if e.access == "gateway"] == [e for e in table if e.access == "gateway"]
    assert routes.table_problems(table) == []


def test_the_gateway_answers_the_official_sdk(only: str, net: Loopback) -> None:
    client = openai_sdk(net, only)
    reply = client.chat.completions.create(model="bench/demo", messages=[{"role": "user", "content": "hello"}])
    assert reply.model_extra is not None and len(reply.model_extra["bench"]["seats"]) >= 3
    assert "bench/demo" in [m.id for m in client.models.list()]
    with net.client() as http:
        assert http.get(only + "/health").json()["ok"] is True


def test_admin_routes_and_pages_are_not_there(only: str, net: Loopback) -> None:
    assert len(ADMIN_PATHS) > 50
    answered = []
    with net.client() as http:
        for path in [*ADMIN_PATHS, *DASHBOARD]:
            for method in ("GET", "POST"):
                answer = http.request(method, only + path, json={} if method == "POST" else None)
                if answer.status_code != 404 or "gateway-only" not in answer.json()["error"]["message"]:
                    answered.append((method, path, answer.status_code))
        message = http.get(only + "/api/status").json()["error"]["message"]
    assert answered == []
    listed = set(message.split("routes: ", 1)[1].split(", "))
    assert "/v1/chat/completions" in listed and "/api/chat" in listed and not listed & {*ADMIN_PATHS, *DASHBOARD}


def test_with_a_token_the_admin_routes_are_still_404_and_the_gateway_wants_keys(
        demo_settings: Settings, net: Loopback) -> None:
    port = free_port()
    app = create_app(replace(demo_settings, port=port, admin_token=ADMIN_TOKEN), table=routes.GATEWAY_TABLE)
    base = net.serve(app, port)
    try:
        with net.client() as http:
            assert http.get(base + "/api/status", headers=bearer(ADMIN_TOKEN)).status_code == 404
            assert http.get(base + "/", headers=bearer(ADMIN_TOKEN)).status_code == 404
            assert http.get(base + "/v1/models").status_code == 401  # keys are required with a token
        with pytest.raises(openai.AuthenticationError):
            openai_sdk(net, base).models.list()
    finally:
        net.stop(base)


def test_the_full_server_still_serves_them(gateway: str, net: Loopback) -> None:
    with net.client() as http:
        assert http.get(gateway + "/api/status").status_code == 200
        assert http.get(gateway + "/login").status_code == 200
    assert isinstance(httpx.URL(gateway).port, int)
