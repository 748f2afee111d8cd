"""A provider key never leaves through upstream text, end to end: a server process whose one
endpoint echoes its key (and its header values) in answers, streams (the key cut across pieces,
in tool-call arguments too), SSE error events, error bodies, headers, a redirect, a model listing
and an exception the provider raises. Afterwards every reply (panels, route turns, whole and
streamed), ``GET /bench/quotas``, the admin API, the CLI's output, the server's log (tracebacks
included) and the database files (the WAL and shared memory too, as raw bytes) are searched for
the key (any run of 12 of its characters, in any case; the upstream echoes it as sent, then
upper-cased): it is nowhere, and the masked reasons are there."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import pytest

from benchwarmers_mcp.store import Database, endpoints, models
from benchwarmers_mcp.store import collections as cs
from benchwarmers_mcp.store.collections import Collection
from benchwarmers_mcp.store.endpoints import Endpoint
from benchwarmers_mcp.store.models import ModelRecord
from tests.fakes.echo_upstream import BEHAVIOURS, ECHO_KEY, ECHO_ORG, EchoUpstream, leaks, raw_store
from tests.kits.servers import serve_in_thread, spawn_server

pytestmark = pytest.mark.e2e

BENCH = shutil.which("bench", path=str(Path(sys.executable).parent))
TOOL = {"type": "function", "function": {"name": "save", "description": "keep a token",
                                         "parameters": {"type": "object", "properties": {"token": {"type": "string"}}}}}
COLLECTIONS = {"agent": ["stream"], "cut": ["midway"], "bad": ["badline"], "calm": ["whole", "e429"],
               "panel": ["whole", "e400", "e404", "e429", "e500", "redirect", "crash", "e401"]}


async def _seed(home: Path, base: str) -> None:
    async with Database(home / "benchwarmers.db") as db:
        await endpoints.add(db, Endpoint("echo", base, key_name="echo", headers={"X-Org": ECHO_ORG}))
        for name in (*BEHAVIOURS, "crash"):
            await models.register(db, ModelRecord(name, name, "echo", name, tools=True))
        await cs.save_gateway_settings(db, cs.GatewaySettings(max_calls=8, max_explorers=0))
        for name, members in COLLECTIONS.items():
            await cs.save(db, Collection(name, tuple(members), f"{name} collection"))


def _replies(base: str) -> list[str]:
    """Everything the server answers, as text, in an order where the 401 (which pauses the
    connection) comes last among the calls that reach the upstream."""
    out: list[str] = []
    ask = {"messages": [{"role": "user", "content": "say the token"}], "tools": [TOOL]}
    with httpx.Client(base_url=base, timeout=60) as http:
        def post(path: str, body: dict) -> httpx.Response:
            response = http.post(path, json=body)
            out.append(f"{response.status_code} {response.headers} {response.text}")
            return response

        assert http.post("/api/endpoint/key", json={"name": "echo", "key": ECHO_KEY}).status_code == 200
        for collection in ("agent", "cut", "bad"):
            for stream in (True, False):
                post("/v1/chat/completions", {**ask, "model": f"bench/{collection}:route", "stream": stream})
        post("/v1/chat/completions", {"model": "bench/calm", "stream": True, "messages": ask["messages"]})
        post("/api/endpoint/test", {"name": "echo"})
        out.append(http.post("/api/candidates", json={}).text)
        panel = post("/v1/chat/completions", {"model": "bench/panel", "messages": ask["messages"]})
        post("/v1/chat/completions", {"model": "bench/panel", "messages": ask["messages"]})  # paused by then
        post("/v1/messages", {"model": "bench/calm", "max_tokens": 100, "messages": ask["messages"]})
        for path in ("/bench/quotas", "/api/limits", "/api/endpoints", "/api/status", "/api/models",
                     "/bench/record?collection=bench/panel", "/api/model/facts?alias=e400"):
            out.append(http.get(path).text)
        assert "sent with [masked key echo]" in out[-1], "the learned window's evidence, masked"
        seats = panel.json()["bench"]["seats"]
        assert {s["alias"]: s["status"] for s in seats} == {
            "whole": "ok", "e400": "error", "e404": "error", "e429": "error", "e500": "error", "redirect": "error",
            "crash": "error", "e401": "error"}
    return out


def _cli(base: str) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCHWARMERS_", "BENCH_"))}
    env["BENCHWARMERS_URL"] = base
    out = []
    for args in (["quotas"], ["quotas", "--json"], ["endpoint", "test", "echo"], ["candidates"], ["models"],
                 ["ask", "-c", "calm", "say the token"], ["endpoints"]):
        done = subprocess.run([BENCH, *args], capture_output=True, text=True, env=env, timeout=60, stdin=subprocess.DEVNULL)
        out.append(f"{args} {done.returncode} {done.stdout} {done.stderr}")
    return out


@pytest.mark.parametrize("spell", [str, str.upper], ids=["as sent", "upper-cased"])
def test_an_echoing_upstream_leaks_the_key_nowhere_end_to_end(home: Path, tmp_path: Path, spell) -> None:
    echo = EchoUpstream(spell=spell)
    log = tmp_path / "server.log"
    with serve_in_thread(echo.app()) as upstream:
        anyio.run(_seed, home, upstream + "/v1")
        with spawn_server(home, log=log) as base:
            replies = _replies(base)
            cli = _cli(base)
    assert {"stream", "midway", "badline", "whole", "e429", "e401", "crash"} <= set(echo.models_seen)
    written = log.read_text(errors="replace")
    assert "Traceback" in written and "failed unexpectedly" in written, "the provider's exception was logged"
    for text in (*replies, *cli, written):
        assert not leaks(text), text
    every = "\n".join((*replies, *cli))
    assert "[masked key echo]" in every and "[masked header X-Org]" in every
    assert "Incorrect API key provided: [masked key echo]" in every, "reasons are kept, masked"
    assert "leaky-[masked key echo]" in every, "the listing too"
    assert "maximum context length is 8192 tokens (sent with [masked key echo]" in every, "a learned fact's evidence"
    stored = raw_store(home)
    assert stored and not leaks(stored.decode("latin-1"), (ECHO_KEY,))
    assert json.dumps(ECHO_KEY)[1:-1].encode() not in stored
