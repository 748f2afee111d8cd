"""Bad input is a 4xx in the route's own error shape, never a 500 or a traceback, on every route of
the route table (``routes.TABLE``, whatever routes it holds): strings that are valid JSON but not
valid text (a lone surrogate in a prompt, a collection name, a verdict note, a name), ``NaN`` and
``Infinity``, odd bytes in headers and queries, ``Content-Length`` with ``Transfer-Encoding``, too
many or too large headers, a body that does not arrive in time, and a client that hangs up mid-body
(logged as a hang-up, never as a failure). The app runs in-process with its lifespan; the same
bounds on a real socket are in ``e2e/test_connection_bounds.py``."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from benchwarmers_mcp import routes
from benchwarmers_mcp.admin import events as events_api
from benchwarmers_mcp.errors import BadRequest, BenchError, HeadersTooLarge, RequestTimeout
from benchwarmers_mcp.settings import Settings
from tests.kits.mcp import seed_bench_async
from tests.kits.security import app_client, expected_shape, skeleton

pytestmark = pytest.mark.anyio

HOST = [(b"host", b"127.0.0.1:8122")]
JSON = [(b"content-type", b"application/json")]
MCP_ACCEPT = [(b"accept", b"application/json, text/event-stream")]
LONE = "\\ud800"  # as it stands in JSON text: valid JSON, not valid Unicode text

# Bodies every route gets, each holding one bad value where a route of some shape reads it.
SURROGATE_BODIES = {
    "a prompt": '{"model": "bench/core", "messages": [{"role": "user", "content": "where %s"}], "input": "x %s", '
                '"prompt": "y %s", "contents": [{"role": "user", "parts": [{"text": "z %s"}]}], "max_tokens": 9}',
    "a route prompt": '{"model": "bench/core:route", "messages": [{"role": "user", "content": "hi %s"}]}',
    "a collection name": '{"model": "bench/co%sre", "messages": [{"role": "user", "content": "hi"}]}',
    "a verdict note": '{"call": "p20260101-000000-abcd.member1", "useful": true, "note": "checked %s"}',
    "a call id": '{"calls": ["p1%s"], "session": "s%s"}',
    "a name": '{"name": "n%s", "members": ["sage"], "base_url": "http://127.0.0.1:9/v1", "token": "t%s"}',
    "an object key": '{"model": "bench/core", "messages": [{"role": "user", "content": "hi"}], "%s": 1}',
    "a JSON-RPC call": '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ask", '
                       '"arguments": {"collection": "core", "prompt": "why %s"}}}',
}
NUMBER_BODIES = {
    "NaN": '{"model": "bench/core", "messages": [{"role": "user", "content": "hi"}], "temperature": NaN}',
    "Infinity": '{"call": "p1.member1", "useful": true, "max_tokens": Infinity}',
    "-Infinity": '{"calls": [-Infinity], "name": "x"}',
    "1e999": '{"model": "bench/core", "messages": [{"role": "user", "content": "hi"}], "top_p": 1e999}',
    "a NaN id": '{"jsonrpc": "2.0", "id": NaN, "method": "tools/list"}',
}
# Where each shape's good request goes, for the checks that need the route to run.
GOOD = {
    "openai": {"model": "bench/core", "messages": [{"role": "user", "content": "hi"}]},
    "completions": {"model": "bench/core", "prompt": "hi"},
    "responses": {"model": "bench/core", "input": "hi"},
    "anthropic": {"model": "bench/core", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]},
    "gemini": {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
    "ollama": {"model": "bench/core", "messages": [{"role": "user", "content": "hi"}], "stream": False},
    "mcp": {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
}


def targets() -> Iterator[tuple[str, str]]:
    """(method, path) for every method of every route in the table, parameters filled in."""
    for entry in routes.TABLE:
        for method in entry.methods:
            filler = "core:generateContent" if method == "POST" else "core"
            path = entry.path.replace("{rest:path}", filler)
            while "{" in path:
                start = path.index("{")
                path = path[:start] + "core" + path[path.index("}", start) + 1:]
            yield method, path


TARGETS = sorted(set(targets()))


def good_body(path: str) -> bytes:
    shape = routes.shape_of(path)
    return json.dumps(GOOD.get(shape, GOOD["openai"])).encode()


@pytest.fixture(autouse=True)
def short_event_streams(monkeypatch: pytest.MonkeyPatch) -> None:
    """``GET /api/events`` streams for ``LIFETIME`` (15 s) before it ends; a request here reads the
    whole reply, so the stream is cut to a fifth of a second (its head and ``ready`` frame first)."""
    monkeypatch.setattr(events_api, "LIFETIME", 0.2)


@pytest.fixture
async def client(home: Path, settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    await seed_bench_async(home)
    async with app_client(settings) as client:
        yield client


def assert_refused(response: httpx.Response, path: str, error: BenchError, what: str) -> None:
    assert response.status_code == error.status, (what, path, response.status_code, response.text[:300])
    assert "Traceback" not in response.text
    assert skeleton(response.json()) == expected_shape(path, error), (what, path, response.text[:300])


@pytest.mark.parametrize(("method", "path"), TARGETS)
async def test_strings_that_are_not_text_and_numbers_json_lacks_are_400(client: httpx.AsyncClient, method: str,
                                                                       path: str) -> None:
    headers = [*HOST, *JSON, *MCP_ACCEPT]
    for what, template in {**SURROGATE_BODIES, **NUMBER_BODIES}.items():
        body = template.replace("%s", LONE).encode()
        response = await client.request(method, path, headers=headers, content=body)
        assert_refused(response, path, BadRequest("x"), what)
        assert "NaN" in response.text or "surrogate" in response.text or "too large" in response.text, what


@pytest.mark.parametrize(("method", "path"), TARGETS)
async def test_odd_bytes_in_headers_and_queries_are_never_a_500(client: httpx.AsyncClient, method: str,
                                                               path: str) -> None:
    odd = [(b"x-claude-code-session-id", b"\xed\xa0\x80\xff"), (b"user-agent", b"agent/\xc3\x28\x00"),
           (b"anthropic-beta", b"\xf0\x28\x8c\xbc"), (b"mcp-session-id", b"\xff\xfe"), (b"x-goog-api-client", b"\x80")]
    query = "?collection=%ED%A0%80&task=%FF%00&alt=sse%C0"
    body = good_body(path) if method == "POST" else b""
    response = await client.request(method, path + query, headers=[*HOST, *JSON, *MCP_ACCEPT, *odd], content=body)
    assert response.status_code < 500, (path, response.status_code, response.text[:300])
    assert "Traceback" not in response.text


@pytest.mark.parametrize(("method", "path"), TARGETS)
async def test_content_length_with_transfer_encoding_is_refused(client: httpx.AsyncClient, method: str,
                                                               path: str) -> None:
    app = client.asgi_app  # type: ignore[attr-defined]
    headers = [*HOST, *JSON, (b"content-length", b"2"), (b"transfer-encoding", b"chunked")]
    status, sent, head = await asgi_head(app, method, path, headers, [(b"{}", False)])
    assert status == 400, (path, sent)
    assert skeleton(json.loads(sent)) == expected_shape(path, BadRequest("x"))
    assert b"Content-Length and Transfer-Encoding" in sent, (path, sent)  # the guard's refusal, not the route's
    assert (b"connection", b"close") in head, (path, head)


@pytest.mark.parametrize(("method", "path"), TARGETS)
async def test_too_many_or_too_large_headers_are_431(client: httpx.AsyncClient, method: str, path: str) -> None:
    many = [(f"x-h{i}".encode(), b"1") for i in range(120)]
    large = [(b"x-large", b"a" * 40_000)]
    for extra in (many, large):
        response = await client.request(method, path, headers=[*HOST, *JSON, *extra], content=good_body(path))
        assert_refused(response, path, HeadersTooLarge("x"), "headers")


async def asgi(app: Any, method: str, path: str, headers: list[tuple[bytes, bytes]],
               pieces: list[tuple[bytes, bool]], then: str = "disconnect") -> tuple[int, bytes]:
    """One request straight to the ASGI app, its body sent as ``pieces`` (bytes, more_body), and
    after them ``then``: ``disconnect`` (the client hangs up) or ``wait`` (it never sends again).
    Returns the status (0 when nothing was sent) and the body."""
    status, body, _ = await asgi_head(app, method, path, headers, pieces, then)
    return status, body


async def asgi_head(app: Any, method: str, path: str, headers: list[tuple[bytes, bytes]],
                    pieces: list[tuple[bytes, bool]], then: str = "disconnect",
                    ) -> tuple[int, bytes, list[tuple[bytes, bytes]]]:
    """``asgi``, with the response's headers (lower-cased names) too."""
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
             "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
             "headers": headers, "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8122)}
    messages = [{"type": "http.request", "body": body, "more_body": more} for body, more in pieces]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop(0)
        if then == "wait":
            await anyio.sleep_forever()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    with anyio.fail_after(60):
        await app(scope, receive, send)
    start = next((m for m in sent if m["type"] == "http.response.start"), {})
    head = [(bytes(k).lower(), bytes(v)) for k, v in start.get("headers", [])]
    return start.get("status", 0), b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body"), head


POSTS = [(m, p) for m, p in TARGETS if m == "POST"]


@asynccontextmanager
async def app_of(settings: Settings) -> AsyncIterator[Any]:
    async with app_client(settings) as client:
        yield client.asgi_app  # type: ignore[attr-defined]


async def test_a_client_that_hangs_up_mid_body_is_logged_as_a_hang_up(home: Path, settings: Settings,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    await seed_bench_async(home)
    caplog.set_level(logging.INFO, logger="benchwarmers")
    async with app_of(settings) as app:
        for method, path in POSTS:
            caplog.clear()
            headers = [*HOST, *JSON, *MCP_ACCEPT, (b"content-length", b"4000")]
            status, _ = await asgi(app, method, path, headers, [(b'{"model": "bench/co', True)])
            assert status in (0, 499), (path, status)
            failures = [r for r in caplog.records if r.levelno >= logging.WARNING]
            assert not failures, (path, [r.getMessage() for r in failures])
            assert any("hung up" in r.getMessage() for r in caplog.records), path
            logged = [r.getMessage() for r in caplog.records if r.name == "benchwarmers.access"]
            assert any(f" {path} 499 " in line for line in logged), (path, logged)


async def test_a_body_that_does_not_arrive_in_time_is_408(home: Path, settings: Settings) -> None:
    await seed_bench_async(home)
    answers: dict[str, tuple[int, bytes]] = {}
    async with app_of(replace(settings, body_timeout=0.2)) as app:

        async def stalled(method: str, path: str) -> None:
            headers = [*HOST, *JSON, *MCP_ACCEPT, (b"content-length", b"4000")]
            answers[path] = await asgi(app, method, path, headers, [(b'{"model": ', True)], then="wait")

        async with anyio.create_task_group() as tg:  # every route at once: each waits out its own timeout
            for method, path in POSTS:
                tg.start_soon(stalled, method, path)
    assert sorted(answers) == sorted(path for _, path in POSTS)
    for _, path in POSTS:
        status, sent = answers[path]
        assert status == 408, (path, sent)
        assert skeleton(json.loads(sent)) == expected_shape(path, RequestTimeout("x"))


async def test_a_chunked_body_over_the_limit_is_413(home: Path, settings: Settings) -> None:
    async with app_of(replace(settings, max_body=1000)) as app:
        for method, path in POSTS:
            headers = [*HOST, *JSON, (b"transfer-encoding", b"chunked")]
            status, _ = await asgi(app, method, path, headers, [(b" " * 600, True), (b" " * 600, True)])
            assert status == 413, path
