"""An upstream that echoes the provider key re-cased (upper-cased, case swapped) or in part (runs
of it from its middle and its end) leaks it nowhere, through the real paths: the gateway in-process
on both backends, the echoing fake on the loopback, every dialect asked for a route turn and a
panel, whole and streamed, with members that answer with the key, fail with it in an error body
and a header, and break off with it in an SSE error event. Every reply (each dialect's error shape
among them, the headers too), the admin API, every row of every table of the store and the log
hold no run of 12 characters of the key in any case; the masked reasons are there instead."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path

import anyio
import httpx
import pytest

from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import collections as cs
from benchwarmers_mcp.store import endpoints, models
from benchwarmers_mcp.store.collections import Collection
from benchwarmers_mcp.store.endpoints import Endpoint
from benchwarmers_mcp.store.models import ModelRecord
from tests.fakes.echo_upstream import ECHO_KEY, ECHO_ORG, EchoUpstream, leaks, raw_store
from tests.kits import postgres as pg_kit
from tests.kits.gateway import serve_gateway
from tests.kits.loopback import Loopback
from tests.kits.store import store_of, url_for

pytestmark = pytest.mark.backends

SPELLINGS: dict[str, Callable[[str], str]] = {
    "upper": str.upper,
    "swapped": str.swapcase,
    "runs": lambda secret: f"{secret[2:16].upper()} (and {secret[-13:].swapcase()})",
}
MEMBERS = ("whole", "stream", "e400", "e404", "e500", "midway", "redirect", "badline", "e429", "e401")
COLLECTIONS = {"agent": ["stream"], "broken": ["e500"], "cut": ["midway"],
               "panel": ["whole", "stream", "e400", "e404", "e500", "redirect", "badline"], "last": ["e429", "e401"]}
ASK = [{"role": "user", "content": "say the token"}]
REASON = "Incorrect API key provided: [masked key echo]"


async def _seed(home: Path, base: str) -> None:
    async with store_of(home) as db:
        await endpoints.add(db, Endpoint("echo", base, key_name="echo", headers={"X-Org": ECHO_ORG}))
        for name in MEMBERS:
            await models.register(db, ModelRecord(name, name, "echo", name))
        await cs.save_gateway_settings(db, cs.GatewaySettings(max_calls=8, max_explorers=0))
        for name, members in COLLECTIONS.items():
            await cs.save(db, Collection(name, tuple(members), f"{name} collection"))


def _request(dialect: str, model: str, stream: bool) -> tuple[str, dict]:
    """The path and body of one ask of ``model`` in ``dialect``."""
    if dialect == "chat":
        return "/v1/chat/completions", {"model": model, "messages": ASK, "stream": stream}
    if dialect == "responses":
        return "/v1/responses", {"model": model, "input": "say the token", "stream": stream}
    if dialect == "anthropic":
        return "/v1/messages", {"model": model, "max_tokens": 100, "messages": ASK, "stream": stream}
    if dialect == "gemini":
        method = "streamGenerateContent?alt=sse" if stream else "generateContent"
        return f"/v1beta/models/{model}:{method}", {"contents": [{"role": "user", "parts": [{"text": "say the token"}]}]}
    return "/api/chat", {"model": model, "messages": ASK, "stream": stream}


def _error_message(dialect: str, body: dict) -> str:
    """The message of an error reply, read from where each dialect puts it."""
    if dialect == "ollama":
        return str(body["error"])
    if dialect == "anthropic":
        assert body["type"] == "error"
    return str(body["error"]["message"])


def _stored(home: Path) -> str:
    """Every table's rows: the database files as bytes on SQLite (the WAL too), each row as text on PostgreSQL."""
    url = url_for(home)
    if url is None:
        return raw_store(home).decode("latin-1")
    return anyio.run(pg_kit.every_row, url)


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_a_recased_or_partial_key_leaks_nowhere(spelling: str, home: Path, settings: Settings, net: Loopback,
                                                caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    echo = EchoUpstream(spell=SPELLINGS[spelling])
    anyio.run(_seed, home, net.serve(echo.app()) + "/v1")
    gateway = serve_gateway(net, settings, env_keys={"ECHO": ECHO_KEY})
    replies: list[str] = []
    with net.client(base_url=gateway, timeout=60) as http:
        def ask(dialect: str, model: str, stream: bool) -> httpx.Response:
            path, body = _request(dialect, model, stream)
            response = http.post(path, json=body)
            replies.append(f"{dialect} {model} {stream} {response.status_code} {response.headers} {response.text}")
            return response

        for dialect in ("chat", "responses", "anthropic", "gemini", "ollama"):
            for stream in (False, True):
                assert ask(dialect, "bench/agent:route", stream).status_code == 200, replies[-1]
                ask(dialect, "bench/cut:route", stream)
                ask(dialect, "bench/panel", stream)
            refused = ask(dialect, "bench/broken:route", False)
            assert refused.status_code >= 400 and REASON in _error_message(dialect, refused.json()), replies[-1]
            ask(dialect, "bench/broken:route", True)
        ask("chat", "bench/last", False)  # a rate limit and a refused key: the connection rests, then pauses
        for dialect in ("chat", "anthropic", "gemini", "ollama"):
            ask(dialect, "bench/agent:route", False)  # paused: refused, the pause's masked reason said
        for path in ("/api/status", "/bench/quotas", "/api/limits", "/api/endpoints", "/api/models",
                     "/bench/record?collection=bench/panel", "/api/model/facts?alias=e400", "/api/health"):
            replies.append(http.get(path).text)
    net.stop(gateway)
    assert set(MEMBERS) <= set(echo.models_seen), "every member was called for real"
    for reply in replies:
        assert not leaks(reply), reply
    every = "\n".join(replies)
    assert REASON in every and "[masked header X-Org]" in every
    assert "maximum context length is 8192 tokens (sent with [masked key echo]" in every, "a learned fact's evidence"
    stored = _stored(home)
    assert REASON in stored, "the reasons are stored, masked"
    assert not leaks(stored, (ECHO_KEY,)), "no table holds the key (the endpoint's own headers hold X-Org)"
    assert not leaks(caplog.text), caplog.text
    assert json.dumps(ECHO_KEY.upper())[1:-1] not in stored
