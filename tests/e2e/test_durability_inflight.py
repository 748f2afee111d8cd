"""Issue 29: a server killed (SIGKILL) while a call is in flight: the next start books that call to
the ledger as interrupted, its tokens unknown, and the day's window counts it. On SQLite and on
PostgreSQL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import httpx
import pytest

from benchwarmers_mcp.store import ledger
from benchwarmers_mcp.store import limits as limit_store
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.seed import seed
from tests.kits.servers import free_port, server_env, spawn_server, wait_healthy
from tests.kits.store import store_of

pytestmark = [pytest.mark.e2e, pytest.mark.backends]
STUCK = "stuck?fail=hang"  # the fake holds the call until its caller goes away


async def _prepare(home: Path) -> None:
    async with store_of(home) as db:
        await limit_store.set_limit(db, "connection", "fake", "rpd", 50)


async def _store(home: Path) -> tuple[int, list[ledger.UsageRow]]:
    async with store_of(home) as db:
        return await limit_store.inflight_count(db), await ledger.in_order(db)


def _ask(base: str) -> None:
    try:
        httpx.post(base + "/v1/chat/completions", timeout=120,
                   json={"model": "bench/core", "messages": [{"role": "user", "content": "hold on"}]})
    except httpx.HTTPError:
        pass  # the server is killed under it


def test_a_call_in_flight_at_a_kill_reaches_the_ledger_on_the_next_start(home: Path, upstream: str,
                                                                           fake: FakeUpstream) -> None:
    seed(home, base_url=upstream, served={"stuck": STUCK}, collections={"core": ["stuck"]})
    anyio.run(_prepare, home)
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "benchwarmers_mcp", "serve"], env=server_env(home, port),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    asking = threading.Thread(target=_ask, args=(f"http://127.0.0.1:{port}",), daemon=True)
    try:
        wait_healthy(f"http://127.0.0.1:{port}", proc)
        asking.start()
        deadline = time.monotonic() + 60
        while fake.count(STUCK) == 0:  # admitted (its in-flight entry written), then sent
            assert time.monotonic() < deadline and proc.poll() is None, "the call never reached the upstream"
            time.sleep(0.05)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    asking.join(timeout=120)
    assert anyio.run(_store, home) == (1, []), "in flight, and nothing in the ledger: what a crash leaves"

    with spawn_server(home) as base:
        inflight, rows = anyio.run(_store, home)
        quotas = httpx.get(base + "/bench/quotas", timeout=30).json()
    assert inflight == 0
    [row] = rows
    assert (row.alias, row.status, row.tokens_unknown, row.attempts) == ("stuck", ledger.INTERRUPTED, True, 1)
    assert row.tokens_in > 0, "the tokens the pacer counted it at"
    [fake_connection] = [c for c in quotas["connections"] if c["connection"] == "fake"]
    assert fake_connection["month"]["calls"] == 1 and fake_connection["month"]["tokens_unknown"] == 1
    assert [(w["metric"], w["window"], w["used"]) for w in fake_connection["windows"]] == [("requests", "day", 1)]
