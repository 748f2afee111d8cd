"""Issue 11, access closed by default: the engine runs no ask without the caller's Access, a route
reached without the guard answers nothing, and every gateway route of the table honours a scoped
key (a new route must say how, or this test fails)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from starlette.applications import Starlette

from benchwarmers_mcp.access import gateway_keys
from benchwarmers_mcp.app import make_client, mount
from benchwarmers_mcp.context import Access, Context
from benchwarmers_mcp.engine.panel import start_panel
from benchwarmers_mcp.engine.route import start_turn
from benchwarmers_mcp.errors import BenchError, Forbidden
from benchwarmers_mcp.messages import Ask, user
from benchwarmers_mcp.routes import TABLE
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import Database
from benchwarmers_mcp.store.collections import Collection
from benchwarmers_mcp.upstream.caller import ModelCaller
from benchwarmers_mcp.upstream.keys import KeyStore
from tests.kits.security import app_client, bearer
from tests.kits.seed import seed_async
from tests.test_route_table import sample

pytestmark = pytest.mark.anyio
PROMPT = [{"role": "user", "content": "hi"}]


async def seeded(home: Path) -> None:
    await seed_async(home, base_url=None, api="simulated", endpoint="simulated",
                     served={"sage": "simulated/sage", "quill": "simulated/quill"},
                     collections={"core": ["sage"], "other": ["quill"]})


@pytest.fixture
async def ctx(settings: Settings, home: Path) -> AsyncIterator[Context]:
    await seeded(home)
    async with Database(settings.store_target) as db, make_client(settings) as http, anyio.create_task_group() as tg:
        keys = KeyStore(settings.config_dir, {})
        yield Context(settings, db, keys, http, ModelCaller(db, keys, http), tg)
        tg.cancel_scope.cancel()


CORE = Collection("core", ("sage",))


# ---- the engine -------------------------------------------------------------------------------

async def test_the_engine_runs_no_ask_without_an_access(ctx: Context) -> None:
    ask = Ask("core", (user("hi"),))
    with pytest.raises(TypeError, match="access"):
        await start_panel(ctx, ask, CORE, "all")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="access"):
        await start_turn(ctx, ask, CORE)  # type: ignore[call-arg]
    for missing in (None, "local", {"key_name": "local", "collections": None}):
        with pytest.raises(BenchError, match="without an access check") as e:
            await start_panel(ctx, ask, CORE, "all", access=missing)  # type: ignore[arg-type]
        assert e.value.status == 500
        with pytest.raises(BenchError, match="without an access check"):
            await start_turn(ctx, ask, CORE, access=missing)  # type: ignore[arg-type]
    run = await start_panel(ctx, ask, CORE, "all", access=Access.unscoped())
    await run.wait()
    assert [s.status for s in run.seats_done] == ["ok"] * len(run.seats_done) and run.seats_done


async def test_the_engine_itself_holds_a_key_to_its_collections(ctx: Context) -> None:
    scoped = Access("ci", ("other",))
    with pytest.raises(Forbidden, match="gateway key 'ci' may ask only bench/other"):
        await start_panel(ctx, Ask("core", (user("hi"),)), CORE, "all", access=scoped)
    with pytest.raises(Forbidden, match="may ask only bench/other"):
        await start_turn(ctx, Ask("core", (user("hi"),)), CORE, access=scoped)
    run = await start_panel(ctx, Ask("other", (user("hi"),)), Collection("other", ("quill",)), "all", access=scoped)
    await run.wait()
    assert run.seats_done


# ---- the routes without the guard ----------------------------------------------------------------

async def test_no_route_but_the_open_ones_answers_without_the_guard() -> None:
    """A face mounted without the guard in front has no Access to hand the engine: it refuses."""
    transport = httpx.ASGITransport(app=Starlette(routes=mount()))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8122") as client:
        assert (await client.get("/health")).status_code == 200
        for entry in TABLE:
            if entry.access == "open":
                continue
            method = entry.methods[0]
            r = await client.request(method, sample(entry), json={"model": "bench/core", "messages": PROMPT})
            assert r.status_code == 500, (method, entry.path, r.text)
            assert "without an access check" in r.text, (method, entry.path, r.text)


# ---- every gateway route and a scoped key -------------------------------------------------------

@dataclass(frozen=True)
class Probe:
    """How a route shows a key's scope: ``ask`` refuses another collection (403), ``list`` leaves it
    out, ``find`` does not find it (404); ``exempt`` names no collection, with the reason."""

    kind: str
    path: str = ""
    body: dict[str, Any] | None = None
    why: str = ""


def ask(path: str, **body: Any) -> Probe:
    return Probe("ask", path, body)


GEMINI = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
ISSUE_12 = "call ids and records: issue 12 extends scope to verdicts and records"
PROBES: dict[tuple[str, str], Probe] = {
    ("POST", "/v1/chat/completions"): ask("/v1/chat/completions", model="bench/{c}", messages=PROMPT),
    ("POST", "/chat/completions"): ask("/chat/completions", model="{c}", messages=PROMPT),
    ("GET", "/v1/models"): Probe("list", "/v1/models"),
    ("GET", "/models"): Probe("list", "/models"),
    ("POST", "/v1/models/{rest:path}"): ask("/v1/models/{c}:generateContent", **GEMINI),
    ("GET", "/v1/models/{rest:path}"): Probe("find", "/v1/models/bench/{c}"),
    ("GET", "/v1beta/models"): Probe("list", "/v1beta/models"),
    ("POST", "/v1beta/models/{rest:path}"): ask("/v1beta/models/{c}:countTokens", **GEMINI),
    ("GET", "/v1beta/models/{rest:path}"): Probe("find", "/v1beta/models/{c}"),
    ("POST", "/v1/messages"): ask("/v1/messages", model="bench/{c}", max_tokens=50, messages=PROMPT),
    ("POST", "/v1/messages/count_tokens"): ask("/v1/messages/count_tokens", model="bench/{c}", messages=PROMPT),
    ("POST", "/v1/responses"): ask("/v1/responses", model="bench/{c}", input="hi"),
    ("POST", "/responses"): ask("/responses", model="bench/{c}", input="hi"),
    ("POST", "/v1/completions"): ask("/v1/completions", model="bench/{c}", prompt="hi"),
    ("POST", "/completions"): ask("/completions", model="bench/{c}", prompt="hi"),
    ("POST", "/api/chat"): ask("/api/chat", model="bench/{c}", messages=PROMPT, stream=False),
    ("POST", "/api/generate"): ask("/api/generate", model="bench/{c}", prompt="hi", stream=False),
    ("POST", "/api/show"): Probe("find", "/api/show", {"model": "bench/{c}"}),
    ("GET", "/api/tags"): Probe("list", "/api/tags"),
    ("GET", "/api/version"): Probe("exempt", why="names no collection"),
    ("GET", "/api/ps"): Probe("exempt", why="names no collection (nothing is loaded in-process)"),
    ("POST", "/bench/verdict"): Probe("exempt", why=ISSUE_12),
    ("POST", "/bench/pending"): Probe("exempt", why=ISSUE_12),
    ("GET", "/bench/record"): Probe("exempt", why=ISSUE_12),
    ("POST", "/bench/remind"): Probe("exempt", why=ISSUE_12),
    ("GET", "/bench/quotas"): Probe("exempt", why="connections, not collections: cut to those its collections' models"
                                                  " use (tests/test_scope_reach.py)"),
    ("GET", "/bench/ratings"): Probe("ask", "/bench/ratings?collection={c}"),
    ("GET", "/bench/suggestions"): Probe(
        "exempt", why="filtered per suggestion: tests/ratings/test_suggestions.py, a scoped key sees its own"),
    ("POST", "/bench/suggestions"): Probe(
        "exempt", why="reviews the key's own collections, then lists as GET: tests/ratings/test_suggestions.py"),
    **{(method, path): Probe("exempt", why="the tools check the scope: test_mcp_http.py TestKeys")
       for path in ("/mcp", "/mcp/", "/v1/mcp", "/v1/mcp/") for method in ("POST", "DELETE")},
}


def test_every_gateway_route_says_how_it_honours_a_keys_scope() -> None:
    declared = {(method, e.path) for e in TABLE if e.access == "gateway" for method in e.methods}
    assert set(PROBES) == declared, "a gateway route of the table needs a Probe here (or no longer exists)"
    assert all(p.why for p in PROBES.values() if p.kind == "exempt")


def _filled(value: Any, collection: str) -> Any:
    if isinstance(value, str):
        return value.replace("{c}", collection)
    if isinstance(value, dict):
        return {k: _filled(v, collection) for k, v in value.items()}
    if isinstance(value, list):
        return [_filled(v, collection) for v in value]
    return value


async def _send(client: httpx.AsyncClient, method: str, probe: Probe, key: str) -> httpx.Response:
    body = _filled(probe.body, "other") if probe.body is not None else None
    return await client.request(method, _filled(probe.path, "other"), json=body, headers=bearer(key))


async def test_a_scoped_key_is_held_to_its_collections_on_every_gateway_route(settings: Settings,
                                                                              home: Path) -> None:
    await seeded(home)
    async with Database(settings.store_target) as db:
        _, core_only = await gateway_keys.create(db, "core-only", ["core"])
        _, everything = await gateway_keys.create(db, "everything")
    async with app_client(settings, require_keys=True) as client:
        for (method, path), probe in PROBES.items():
            if probe.kind == "exempt":
                continue
            scoped, free = await _send(client, method, probe, core_only), await _send(client, method, probe, everything)
            where = (method, path, scoped.text[:300], free.text[:300])
            assert free.status_code == 200, where
            if probe.kind == "ask":
                assert scoped.status_code == 403 and "may ask only bench/core" in scoped.text, where
            elif probe.kind == "find":
                assert scoped.status_code == 404, where
            else:
                assert scoped.status_code == 200 and "bench/core" in scoped.text and "other" not in scoped.text, where
                assert "other" in free.text, where
