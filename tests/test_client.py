"""The one client of a running server (``benchwarmers_mcp/client.py``), shared by the CLI and the
stdio MCP server: its settings and auth rule, its error reader, and a streamed panel whose counts
come from the server's data (``bench_progress``), never from the panel's markdown."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import pytest

from benchwarmers_mcp.app import create_app
from benchwarmers_mcp.client import (
    NotJson,
    PanelCut,
    PanelFailed,
    PanelUpdate,
    Refused,
    ServerClient,
    ServerConfig,
    TimedOut,
    Unreachable,
    server_message,
)
from benchwarmers_mcp.settings import Settings
from tests.kits.seed import seed_async
from tests.kits.servers import free_port

pytestmark = pytest.mark.anyio

ASK = {"model": "bench/core", "stream": True, "messages": [{"role": "user", "content": "Where can this go stale?"}]}


def test_settings_from_the_environment() -> None:
    config = ServerConfig.from_env({"BENCHWARMERS_URL": " https://box:9000/v1/ ", "BENCHWARMERS_KEY": " bwk_k ",
                                    "BENCHWARMERS_ADMIN_TOKEN": "adm-t", "BENCHWARMERS_TIMEOUT": "0.2"})
    assert (config.url, config.key, config.admin_token, config.timeout) == ("https://box:9000", "bwk_k", "adm-t", 1.0)
    assert config.problems == ()
    assert "bwk_k" not in repr(config) and "adm-t" not in repr(config)
    assert ServerConfig.from_env({"BENCHWARMERS_URL": "http://env:1"}, url="http://flag:2").url == "http://flag:2"
    bad = ServerConfig.from_env({"BENCHWARMERS_URL": "box:9000", "BENCHWARMERS_TIMEOUT": "soon"})
    assert bad.timeout == 900.0
    assert [p.split(" ")[0] for p in bad.problems] == ["the", "BENCHWARMERS_TIMEOUT"]
    assert "'box:9000'" in bad.problems[0] and "'soon'" in bad.problems[1]


async def test_one_auth_rule_the_admin_token_on_admin_paths_the_key_elsewhere() -> None:
    seen: dict[str, str | None] = {}

    def answer(request: httpx.Request) -> httpx.Response:
        seen[request.url.path] = request.headers.get("authorization")
        return httpx.Response(200, json={"ok": True})

    config = ServerConfig(key="bwk_k", admin_token="adm-t")
    transport = httpx.MockTransport(answer)
    async with ServerClient(config, admin_path=lambda p: p.startswith("/api/"), transport=transport) as cli:
        await cli.get("/api/status")
        await cli.post("/bench/verdict", {"call": "x", "useful": True})
    async with ServerClient(ServerConfig(key="bwk_k"), transport=transport) as stdio:
        await stdio.get("/api/tags")  # no admin rule: the gateway key everywhere
    async with ServerClient(ServerConfig(), transport=transport) as anonymous:
        await anonymous.get("/v1/models")
    assert seen == {"/api/status": "Bearer adm-t", "/bench/verdict": "Bearer bwk_k", "/api/tags": "Bearer bwk_k",
                    "/v1/models": None}


def test_one_error_reader_for_every_dialect_shape() -> None:
    assert server_message({"error": {"message": "unknown collection 'x'", "code": 404}}) == "unknown collection 'x'"
    assert server_message(b'{"error": "not allowed"}') == "not allowed"
    assert server_message('[{"error": {"message": "gemini says no"}}]') == "gemini says no"
    assert server_message({"errors": ["a", "b"]}) == "a; b"
    assert server_message(httpx.Response(502, text="<html>bad gateway</html>")) is None
    assert server_message({"detail": "elsewhere"}) is None


async def test_failures_leave_as_client_errors() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/refuse":
            return httpx.Response(403, json={"error": {"message": "gateway key 'x' may not"}})
        return httpx.Response(200, text="not json")

    async with ServerClient(ServerConfig(), transport=httpx.MockTransport(answer)) as client:
        with pytest.raises(Refused) as refused:
            await client.post("/refuse", {})
        with pytest.raises(NotJson):
            await client.get("/garbled")
    assert (refused.value.status, refused.value.reason) == (403, "gateway key 'x' may not")
    assert (refused.value.method, refused.value.path) == ("POST", "/refuse")

    async def slow(request: httpx.Request) -> httpx.Response:
        await anyio.sleep(5)
        return httpx.Response(200, json={})

    async with ServerClient(ServerConfig(timeout=0.05), transport=httpx.MockTransport(slow)) as client:
        with pytest.raises(TimedOut) as late:
            await client.get("/v1/models")
    assert (late.value.path, late.value.seconds) == ("/v1/models", 0.05)

    async with ServerClient(ServerConfig(url=f"http://127.0.0.1:{free_port()}")) as nobody:
        with pytest.raises(Unreachable):
            await nobody.get("/v1/models")


def sse(*events: dict[str, Any] | str) -> bytes:
    return b"".join(e.encode() if isinstance(e, str) else f"data: {json.dumps(e)}\n\n".encode() for e in events)


def piece(text: str, progress: dict[str, int] | None = None) -> dict[str, Any]:
    chunk: dict[str, Any] = {"choices": [{"index": 0, "delta": {"content": text}}]}
    if progress is not None:
        chunk["bench_progress"] = progress
    return chunk


async def updates_of(body: bytes) -> tuple[list[PanelUpdate], dict[str, Any]]:
    transport = httpx.MockTransport(lambda request: httpx.Response(200, content=body))
    seen: list[PanelUpdate] = []

    async def collect(update: PanelUpdate) -> None:
        seen.append(update)

    async with ServerClient(ServerConfig(), transport=transport) as client:
        bench = await client.panel(ASK, collect)
    return seen, bench


async def test_counts_come_from_the_data_and_never_from_the_markdown() -> None:
    heading = "Bench bench/core p1 · 2 members + 1 explorer · explorer shape general (default)\n\n"
    # markdown that looks like a heading and seat sections, and no bench_progress: no counts at all
    seen, bench = await updates_of(sse(piece(heading), piece("## member1 — a\n"), ": keep-alive\n\n",
                                       piece("## member2 — b\n"), {"choices": [], "bench": {"seats": []}},
                                       "data: [DONE]\n\n"))
    assert [(u.seats, u.done) for u in seen] == [(None, None)] * 4
    assert [u.idle for u in seen] == [False, False, True, False]
    assert "".join(u.text for u in seen) == heading + "## member1 — a\n## member2 — b\n"
    assert bench == {"seats": []}
    # plain text that says nothing, with the counts as data: the counts are read
    seen, _ = await updates_of(sse(piece("one", {"seats": 3, "done": 0}), piece("two", {"seats": 3, "done": 2}),
                                   {"choices": [], "bench": {"seats": [1, 2, 3]}}))
    assert [(u.text, u.seats, u.done) for u in seen] == [("one", 3, 0), ("two", 3, 2)]


async def test_a_stream_that_fails_or_stops_short_says_so() -> None:
    with pytest.raises(PanelFailed, match="internal error in the gateway"):
        await updates_of(sse(piece("x"), {"error": {"message": "internal error in the gateway", "code": 500}}))
    with pytest.raises(PanelCut):
        await updates_of(sse(piece("x"), "data: [DONE]\n\n"))


async def test_a_real_panel_streams_its_counts_as_data(settings: Settings, home) -> None:
    await seed_async(home, base_url=None, api="simulated", endpoint="sim",
                     served={"owl": "owl?latency=0.1", "lark": "lark?latency=0.3"}, collections={"core": ["owl", "lark"]})
    app = create_app(settings)
    seen: list[PanelUpdate] = []

    async def collect(update: PanelUpdate) -> None:
        seen.append(update)

    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with ServerClient(ServerConfig(url=f"http://127.0.0.1:{settings.port}"), transport=transport) as client:
            bench = await client.panel(ASK, collect)
    total = len(bench["seats"])
    assert total >= 2
    counted = [(u.done, u.seats) for u in seen if not u.idle]
    assert all(seats == total for _, seats in counted), "every piece carries the panel's seat count"
    done = [d for d, _ in counted]
    assert done[0] == 0 and done[-1] == total and done == sorted(done)
    assert {d for d in done} == set(range(total + 1)), "each seat's section carries the count it brought"
    sections = [u for u in seen if u.text.startswith("## ")]
    assert [u.done for u in sections] == list(range(1, total + 1))
