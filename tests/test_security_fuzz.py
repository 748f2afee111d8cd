"""Issue 8: random methods, hosts, headers, credentials, queries and bodies at every route of the
app (in-process, lifespan entered) never get a 500 or a traceback, whether the server is open on
loopback or locked with an admin token and gateway keys."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Any

import anyio
import httpx
import pytest
from anyio.from_thread import start_blocking_portal
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from starlette.routing import Route

from benchwarmers_mcp.admin import events as events_api
from benchwarmers_mcp.app import create_app
from benchwarmers_mcp.settings import Settings
from tests.kits.security import ADMIN_TOKEN
from tests.kits.seed import seed_async

PRINTABLE = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=40)
SEGMENT = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_.:%", min_size=1, max_size=16)
METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"]
PARAM = re.compile(r"\{[^}]+\}")


@dataclass
class Fuzz:
    method: str
    path: str
    query: str
    headers: list[tuple[str, str]]
    body: bytes


def json_values() -> st.SearchStrategy[Any]:
    leaves = st.none() | st.booleans() | st.integers(-10**6, 10**6) | PRINTABLE
    return st.recursive(leaves, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(PRINTABLE, inner, max_size=4),
                        max_leaves=12)


def chat_like() -> st.SearchStrategy[dict]:
    models = st.sampled_from(["bench/core", "bench/core:merged", "bench/core:route", "core", "bench/nope", "", 7])
    content = PRINTABLE | st.lists(st.fixed_dictionaries({"type": st.sampled_from(["text", "image_url", "x"]),
                                                           "text": PRINTABLE}), max_size=2)
    message = st.fixed_dictionaries({"role": st.sampled_from(["user", "system", "assistant", "tool", "x"]),
                                     "content": content})
    return st.fixed_dictionaries({"model": models, "messages": st.lists(message, max_size=3)},
                                 optional={"stream": st.booleans(), "max_tokens": st.integers(-1, 50),
                                           "contents": json_values(), "prompt": PRINTABLE, "name": PRINTABLE,
                                           "calls": json_values(), "tools": json_values(), "bench": json_values()})


def bodies() -> st.SearchStrategy[bytes]:
    return st.one_of(st.just(b""), st.binary(max_size=64),
                     json_values().map(lambda v: json.dumps(v).encode()),
                     chat_like().map(lambda v: json.dumps(v).encode()))


def header_pairs(key: str) -> st.SearchStrategy[list[tuple[str, str]]]:
    values = {
        "host": st.sampled_from(["127.0.0.1:8122", "localhost:8122", "[::1]:8122", "evil.example", "", "127.0.0.1"]),
        "content-type": st.sampled_from(["application/json", "application/json; charset=utf-8", "text/plain",
                                         "application/x-www-form-urlencoded", "multipart/form-data"]) | PRINTABLE,
        "origin": st.sampled_from(["http://127.0.0.1:8122", "http://evil.example", "null", "https://app.example"])
        | PRINTABLE,
        "sec-fetch-site": st.sampled_from(["cross-site", "same-origin", "same-site", "none"]) | PRINTABLE,
        "authorization": st.sampled_from([f"Bearer {key}", f"Bearer {ADMIN_TOKEN}", "Bearer ", "Basic eA==",
                                          "Bearer bwk_" + "A" * 43]) | PRINTABLE,
        "x-api-key": st.sampled_from([key, "sk-x", ""]) | PRINTABLE,
        "x-goog-api-key": st.sampled_from([key, "AIza-x"]) | PRINTABLE,
        "cookie": st.sampled_from(["bw_session=1.2", "bw_session=", "a=b; bw_session=9999999999.00"]) | PRINTABLE,
        "content-length": st.sampled_from(["0", "-1", "abc", "99999999999", "3"]),
        "access-control-request-method": st.sampled_from(["POST", "GET"]) | PRINTABLE,
        "access-control-request-headers": PRINTABLE,
        "accept": st.sampled_from(["application/json, text/event-stream", "text/html", "*/*"]) | PRINTABLE,
        "mcp-session-id": PRINTABLE,
    }
    pair = st.sampled_from(sorted(values)).flatmap(lambda name: st.tuples(st.just(name), values[name]))
    return st.lists(pair, max_size=6)


def requests(routes: list[tuple[str, list[str]]], key: str) -> st.SearchStrategy[Fuzz]:
    def fill(template: str) -> st.SearchStrategy[str]:
        pieces = PARAM.split(template)  # the fixed text around each {param}

        def join(parts: list[str]) -> str:
            return pieces[0] + "".join(part + piece for part, piece in zip(parts, pieces[1:], strict=True))

        return st.lists(SEGMENT, min_size=len(pieces) - 1, max_size=len(pieces) - 1).map(join)

    def target(route: tuple[str, list[str]]) -> st.SearchStrategy[tuple[str, str]]:
        method = st.sampled_from(route[1] or METHODS) if route[1] else st.sampled_from(METHODS)
        return st.tuples(st.one_of(method, method, st.sampled_from(METHODS)), fill(route[0]))

    credential = st.sampled_from([("authorization", f"Bearer {key}"), ("authorization", f"Bearer {ADMIN_TOKEN}"),
                                  ("x-api-key", key), ("x-goog-api-key", key)])
    good = st.tuples(credential).map(lambda c: [("host", "127.0.0.1:8122"), ("content-type", "application/json"),
                                                *c])
    headers = st.one_of(good, good, header_pairs(key), st.tuples(good, header_pairs(key)).map(
        lambda t: t[0] + [p for p in t[1] if p[0] not in ("host", "content-type")]))
    return st.builds(
        lambda mp, query, headers, body: Fuzz(mp[0], mp[1], query, headers, body),
        st.sampled_from(routes).flatmap(target),
        st.sampled_from(["", f"key={key}", "alt=sse", "key=x&key=y", "collection=core", "%zz"]),
        headers, bodies())


@pytest.fixture(autouse=True)
def short_event_streams(monkeypatch: pytest.MonkeyPatch) -> None:
    """``GET /api/events`` streams for ``LIFETIME`` (15 s) and each fuzzed request reads its reply to
    the end: the stream is cut to a fifth of a second (its head and first frame come first)."""
    monkeypatch.setattr(events_api, "LIFETIME", 0.2)


def route_table(app) -> list[tuple[str, list[str]]]:
    table = {r.path: sorted(set(r.methods or []) - {"HEAD"}) for r in app.routes if isinstance(r, Route)}
    for extra in ("/", "/nowhere", "/v1/nowhere", "/api/nowhere"):
        table.setdefault(extra, [])
    return sorted(table.items())


async def send(client: httpx.AsyncClient, fuzz: Fuzz) -> httpx.Response:
    headers = list(fuzz.headers)
    if not any(name == "host" for name, _ in headers):
        headers.append(("host", "127.0.0.1:8122"))
    url = fuzz.path + ("?" + fuzz.query if fuzz.query else "")
    with anyio.fail_after(60):
        return await client.request(fuzz.method, url, headers=headers, content=fuzz.body)


def drive(settings: Settings, key_body: dict, examples: int) -> None:
    anyio.run(lambda: seed_async(settings.home, base_url=None, api="simulated", endpoint="simulated",
                                 served={"sage": "simulated/sage", "caller": "simulated/caller?tool=1"},
                                 collections={"core": ["sage", "caller"]}))
    app = create_app(settings)
    with start_blocking_portal(backend="asyncio") as portal, \
            portal.wrap_async_context_manager(app.router.lifespan_context(app)):
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:8122")
        admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"} if settings.admin_token else {}
        made = portal.call(lambda: client.post("/api/gateway-key", json=key_body, headers=admin))
        key = made.json()["key"]

        @given(fuzz=requests(route_table(app), key))
        @hsettings(max_examples=examples, deadline=None, database=None,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
        def never_500(fuzz: Fuzz) -> None:
            r = portal.call(send, client, fuzz)
            assert r.status_code != 500, (fuzz, r.text[:500])
            assert "Traceback" not in r.text

        try:
            never_500()
        finally:
            portal.call(client.aclose)


def test_random_requests_on_an_open_loopback_server_never_get_a_500(settings: Settings) -> None:
    drive(settings, {"name": "fuzz"}, examples=400)


def test_random_requests_on_a_locked_server_never_get_a_500(settings: Settings) -> None:
    locked = replace(settings, admin_token=ADMIN_TOKEN, allowed_origins=("https://app.example",), max_body=4096)
    drive(locked, {"name": "fuzz", "rpm": 10_000, "collections": ["core"]}, examples=400)
