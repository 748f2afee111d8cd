"""Issue 29, item 9: what a request may hold that a store column may not, on both backends, on
every route of the route table (``routes.TABLE``). A NUL in free text (a prompt, a verdict note)
is stored exactly, like a model's answer; a NUL (any control character) in a name or an id (a
collection, an endpoint, an alias, a call id) is a 400 in the caller's own shape; a whole number
past 64 bits anywhere in a body (an id, a limit, ``max_tokens``, a JSON-RPC id) is a 400 in the
caller's shape, and in a query never a 5xx; an upstream that reports absurd usage (1e20 tokens)
is answered, clamped, and still on the ledger.

One server per backend serves the route-table checks (each test module on PostgreSQL costs a
database); the SDK tests use the usual per-test gateway.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from benchwarmers_mcp import routes
from benchwarmers_mcp.admin import events as events_api
from benchwarmers_mcp.errors import BadRequest, BenchError
from benchwarmers_mcp.messages import MOST_TOKENS
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import calls, ledger, verdicts
from benchwarmers_mcp.web.registry import discover
from tests.conftest import BACKENDS
from tests.kits import store as store_kit
from tests.kits.gateway import openai_sdk, serve_gateway
from tests.kits.loopback import Loopback
from tests.kits.mcp import seed_bench_async
from tests.kits.security import expected_shape, skeleton
from tests.kits.seed import seed
from tests.kits.store import in_store
from tests.test_bad_input import TARGETS

HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
NUL = "\\u0000"  # as it stands in JSON text
HUGE = 2**70

# Bodies every route gets, each with a NUL where a route of some shape reads free text or a name
NUL_BODIES = {
    "a prompt": '{"model": "bench/core", "messages": [{"role": "user", "content": "where %s"}], "input": "x %s", '
                '"prompt": "y %s", "contents": [{"role": "user", "parts": [{"text": "z %s"}]}], "max_tokens": 9, '
                '"stream": false}',
    "a route prompt": '{"model": "bench/core:route", "messages": [{"role": "user", "content": "hi %s"}]}',
    "a collection name": '{"model": "bench/co%sre", "messages": [{"role": "user", "content": "hi"}]}',
    "a verdict note": '{"call": "p20260101-000000-abcd.member1", "useful": true, "note": "checked %s"}',
    "a call id": '{"calls": ["p1%s"], "session": "s%s", "call": "p1%s.member1", "useful": true}',
    "a name": '{"name": "n%s", "members": ["sage"], "base_url": "http://127.0.0.1:9/v1", "alias": "a%s", '
              '"collection": "c%s", "endpoint": "e%s", "connection": "c%s", "served": "s%s", "job": "j%s"}',
    "a JSON-RPC call": '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ask", '
                       '"arguments": {"collection": "co%sre", "prompt": "why %s"}}}',
}
# ... and with a whole number past 64 bits where a route reads one
HUGE_BODIES = {
    "max_tokens": '{"model": "bench/core", "messages": [{"role": "user", "content": "hi"}], "max_tokens": %d}',
    "an id": '{"id": %d}',
    "limits": '{"scope": "model", "subject": "sage", "rpm": %d, "limit": %d, "offset": %d, "count": %d}',
    "a negative one": '{"max_calls": -%d, "max_explorers": 1}',
    "a JSON-RPC id": '{"jsonrpc": "2.0", "id": %d, "method": "tools/list"}',
}
QUERIES = ("id", "run", "limit", "after", "days", "offset", "pageSize", "pageToken", "since", "collection", "alias",
           "task", "model", "endpoint", "find", "kind", "state")


@pytest.fixture(autouse=True)
def short_event_streams(monkeypatch: pytest.MonkeyPatch) -> None:
    """``GET /api/events`` streams for 15 s before it ends: here a fifth of a second (its head first)."""
    monkeypatch.setattr(events_api, "LIFETIME", 0.2)


@dataclass
class Door:
    base: str
    net: Loopback
    home: Path

    def send(self, method: str, path: str, body: bytes | None = None) -> httpx.Response:
        with self.net.client(base_url=self.base, timeout=60) as client:
            return client.request(method, path, headers=HEADERS, content=body)


@pytest.fixture(scope="module", params=BACKENDS)
def door(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Door]:
    """The gateway on a seeded bench (simulated models: no upstream), one per backend."""
    home = tmp_path_factory.mktemp(f"door-{request.param}") / "data"
    home.mkdir()
    url = request.getfixturevalue("postgres_cluster").take() if request.param == "postgresql" else None
    store_kit.bind(home, url)
    try:
        anyio.run(seed_bench_async, home)
        settings = Settings.from_env({}, home=home, config_dir=home.parent / "config", database_url=url)
        with Loopback() as net:
            yield Door(serve_gateway(net, settings), net, home)
    finally:
        store_kit.bind(home, None)
        if url is not None:
            request.getfixturevalue("postgres_cluster").give_back(url)


def refused_in_shape(response: httpx.Response, path: str, error: BenchError, what: str) -> None:
    assert response.status_code == error.status, (what, path, response.status_code, response.text[:300])
    assert "Traceback" not in response.text
    assert skeleton(response.json()) == expected_shape(path, error), (what, path, response.text[:300])


@pytest.mark.parametrize(("method", "path"), TARGETS)
def test_a_nul_or_a_number_past_64_bits_is_never_a_5xx(door: Door, method: str, path: str) -> None:
    """A body with a NUL in free text or a name: never a 5xx (a 4xx in the route's shape); a body with
    a whole number past 64 bits: 400 in the route's shape, every route (the guard reads every JSON
    body); a query with either: never a 5xx."""
    json_shape = routes.shape_of(path) not in ("mcp", "page")  # MCP's own 4xx are its SDK's; pages are HTML
    for what, template in NUL_BODIES.items() if method != "GET" else ():
        response = door.send(method, path, template.replace("%s", NUL).encode())
        assert response.status_code < 500, (what, path, response.status_code, response.text[:300])
        assert "Traceback" not in response.text
        if response.status_code >= 400 and json_shape:
            error = BenchError("x")
            error.status = response.status_code
            assert skeleton(response.json()) == expected_shape(path, error), (what, path, response.text[:300])
    for what, template in HUGE_BODIES.items():
        response = door.send(method, path, template.replace("%d", str(HUGE)).encode())
        refused_in_shape(response, path, BadRequest("x"), what)
        assert "too large" in response.text and "64 bits" in response.text, (what, path, response.text[:300])
    if method == "GET":
        for value in (str(HUGE), "%00"):
            response = door.send(method, path + "?" + "&".join(f"{name}={value}" for name in QUERIES))
            assert response.status_code < 500, (value, path, response.status_code, response.text[:300])


@pytest.mark.parametrize("page", [p.path for p in discover()])
def test_every_dashboard_page_takes_a_nul_or_a_number_past_64_bits_in_its_query(door: Door, page: str) -> None:
    for value in (str(HUGE), "%00"):
        response = door.send("GET", page + "?" + "&".join(f"{name}={value}" for name in (*QUERIES, "page", "q")))
        assert response.status_code < 500, (page, value, response.status_code, response.text[:300])


def test_a_whole_number_past_64_bits_in_a_query_is_a_400(door: Door) -> None:
    for path in ("/api/suite/run?id=", "/api/suite/runs?limit=", "/api/suite/answers?run=", "/api/suite/answers?limit=",
                 "/api/logs?limit=", "/api/stats/usage?days=", "/api/events?after="):
        response = door.send("GET", f"{path}{HUGE}")
        refused_in_shape(response, path.split("?")[0], BadRequest("x"), path)


# A NUL in what names or picks something: a 400 in the caller's shape, saying why
NAMED = [
    ("POST", "/v1/chat/completions", {"model": "bench/co\0re", "messages": [{"role": "user", "content": "hi"}]}),
    ("POST", "/v1/responses", {"model": "bench/co\0re", "input": "hi"}),
    ("POST", "/v1/completions", {"model": "bench/co\0re", "prompt": "hi"}),
    ("POST", "/v1/messages", {"model": "bench/co\0re", "max_tokens": 9, "messages": [{"role": "user", "content": "hi"}]}),
    ("POST", "/v1beta/models/co%00re:generateContent", {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}),
    ("POST", "/api/chat", {"model": "bench/co\0re", "messages": [{"role": "user", "content": "hi"}], "stream": False}),
    ("POST", "/api/generate", {"model": "bench/co\0re", "prompt": "hi", "stream": False}),
    ("GET", "/bench/record?collection=co%00re", None),
    ("POST", "/bench/verdict", {"call": "p1\0.member1", "useful": True}),
    ("POST", "/bench/pending", {"calls": ["p1\0.member1"]}),
    ("POST", "/api/ask", {"collection": "co\0re", "prompt": "hi"}),
    ("POST", "/api/endpoint/test", {"name": "si\0m"}),
    ("POST", "/api/collection/remove", {"name": "co\0re"}),
    ("POST", "/api/model/retire", {"alias": "sa\0ge", "reason": "a reason may hold \0 anything"}),
    ("POST", "/api/gateway-key/remove", {"name": "ap\0p"}),
    ("POST", "/api/limits", {"connection": "si\0m", "rpm": 5}),
    ("POST", "/api/limits", {"model": "sa\0ge", "rpm": 5}),
]


@pytest.mark.parametrize(("method", "path", "body"), NAMED, ids=[f"{m} {p}" for m, p, _ in NAMED])
def test_a_control_character_in_a_name_is_a_400_in_the_callers_shape(door: Door, method: str, path: str,
                                                                      body: dict[str, Any] | None) -> None:
    response = door.send(method, path, None if body is None else json.dumps(body).encode())
    refused_in_shape(response, path.split("?")[0], BadRequest("x"), path)
    assert "control character" in response.text, response.text[:300]


def test_mcp_refuses_a_control_character_in_a_collection_name(door: Door) -> None:
    start = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    with door.net.client(base_url=door.base, timeout=60) as client:
        opened = client.post("/mcp", headers=HEADERS, json=start)
        assert opened.status_code == 200, opened.text
        session = {k: v for k, v in opened.headers.items() if k.lower() == "mcp-session-id"}
        client.post("/mcp", headers={**HEADERS, **session}, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        asked = client.post("/mcp", headers={**HEADERS, **session, "mcp-protocol-version": "2025-06-18"}, json={
            "jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "ask", "arguments": {"collection": "co\0re", "prompt": "hi"}}})
    assert asked.status_code == 200 and "control character" in asked.text, asked.text[:500]


# ---- free text is kept exactly ----------------------------------------------------------------------

PROMPT = "look at \0 this: a NUL in a prompt"
NOTE = "checked \0 twice"


@pytest.mark.backends
def test_a_nul_in_a_prompt_and_a_note_is_kept_exactly(home: Path, upstream: str, net: Loopback, gateway: str,
                                                      http: httpx.Client) -> None:
    seed(home, base_url=upstream, served=["fine"], collections={"core": ["fine"]})
    reply = openai_sdk(net, gateway).chat.completions.create(
        model="bench/core", messages=[{"role": "user", "content": PROMPT}])
    bench = reply.model_extra["bench"]
    assert [s["status"] for s in bench["seats"]] == ["ok"]
    panel = in_store(home, lambda db: calls.panel(db, bench["panel"]))
    assert panel is not None and panel.prompt == PROMPT

    call = bench["seats"][0]["call"]
    judged = http.post(gateway + "/bench/verdict", json={"call": call, "useful": True, "note": NOTE})
    assert judged.status_code == 200 and judged.json()["recorded"]["note"] == NOTE
    again = http.post(gateway + "/bench/verdict", json={"call": call, "useful": True, "note": NOTE})
    assert again.json()["written"] is False  # the same verdict, read back exactly, is not written twice
    latest = in_store(home, lambda db: verdicts.latest(db, call))
    assert latest is not None and latest.note == NOTE


# ---- an upstream's absurd usage -----------------------------------------------------------------------

def absurd_upstream() -> Starlette:
    """An OpenAI-compatible upstream that reports 1e20 tokens in, 10**20 out and -5 reasoning."""
    async def chat(request: Request) -> JSONResponse:
        body = await request.json()
        return JSONResponse({
            "id": "c", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "an answer"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1e20, "completion_tokens": 10**20, "total_tokens": 2e20,
                      "completion_tokens_details": {"reasoning_tokens": -5}}})

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


@pytest.mark.backends
def test_absurd_upstream_usage_is_clamped_and_still_on_the_ledger(home: Path, net: Loopback,
                                                                  settings: Settings) -> None:
    seed(home, base_url=net.serve(absurd_upstream()) + "/v1", served=["greedy"], collections={"core": ["greedy"]})
    gateway = serve_gateway(net, settings)
    client = openai_sdk(net, gateway)
    for _ in range(2):  # the second after the first's sums are in the store
        reply = client.chat.completions.create(model="bench/core", messages=[{"role": "user", "content": "hi"}])
        (seat,) = reply.model_extra["bench"]["seats"]
        assert seat["status"] == "ok" and seat["answer"] == "an answer"
        assert reply.usage is not None and reply.usage.prompt_tokens == MOST_TOKENS
    rows = in_store(home, ledger.in_order)
    assert [(r.alias, r.status, r.tokens_in, r.tokens_out, r.reasoning) for r in rows] == \
        [("greedy", "ok", MOST_TOKENS, MOST_TOKENS, 0)] * 2
    stored = in_store(home, lambda db: calls.seats_of(db, reply.model_extra["bench"]["panel"]))
    assert [(s.tokens_in, s.tokens_out) for s in stored] == [(MOST_TOKENS, MOST_TOKENS)]
    totals = in_store(home, ledger.totals)
    assert totals["fake"]["tokens_in"] == 2 * MOST_TOKENS
