"""Two server processes on one data folder never exceed a per-minute limit together: the windows
and the calls in flight live in the store, and admission is one BEGIN IMMEDIATE transaction."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx
import pytest

from benchwarmers_mcp.store import collections as cs
from benchwarmers_mcp.store import ledger
from benchwarmers_mcp.store import limits as store
from tests.kits.seed import seed
from tests.kits.servers import spawn_server
from tests.kits.store import store_of

pytestmark = pytest.mark.e2e

RPM = 4


async def _prepare(home: Path) -> None:
    async with store_of(home) as db:
        await cs.save_gateway_settings(db, cs.GatewaySettings(max_calls=5, max_explorers=0))
        await store.set_limit(db, "connection", "fake", "rpm", RPM)


async def _panels(bases: list[str], per_server: int) -> list[dict]:
    seats: list[dict] = []

    async def one(base: str) -> None:
        async with httpx.AsyncClient(timeout=60) as http:
            reply = await http.post(base + "/v1/chat/completions", json={
                "model": "bench/trio", "messages": [{"role": "user", "content": "check this"}]})
            reply.raise_for_status()
            seats.extend(reply.json()["bench"]["seats"])

    async with anyio.create_task_group() as tg:
        for _ in range(per_server):
            for base in bases:
                tg.start_soon(one, base)
    return seats


async def _ledger(home: Path) -> list[ledger.UsageRow]:
    async with store_of(home) as db:
        return await ledger.rows(db)


def test_two_processes_share_one_rpm(home: Path, upstream: str, fake):
    seed(home, base_url=upstream, served=["m1", "m2", "m3"], collections={"trio": ["m1", "m2", "m3"]})
    anyio.run(_prepare, home)
    with spawn_server(home, BENCH_SEAT_TIMEOUT="5") as one, spawn_server(home, BENCH_SEAT_TIMEOUT="5") as two:
        assert one != two
        seats = anyio.run(_panels, [one, two], 3)
    assert len(seats) == 18
    assert fake.count() == RPM, "together the two servers sent exactly the per-minute limit, no more"
    answered = [s for s in seats if s["status"] == "ok"]
    refused = [s for s in seats if s["status"] == "error"]
    assert len(answered) == RPM and len(refused) == 18 - RPM
    assert all("not sent; paced by the bench" in s["error"] for s in refused)
    rows = anyio.run(_ledger, home)
    assert sorted((r.status, r.attempts) for r in rows) == [("ok", 1)] * RPM + [("refused", 0)] * (18 - RPM)
