"""Three server processes on one store (issue 19): a hand-set upstream rpm holds across all three,
and a verdict written through one replica is in the record read through another. Runs on SQLite
(one data folder) and on PostgreSQL (the shared store replicas use)."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx
import pytest

from benchwarmers_mcp.store import collections as cs
from benchwarmers_mcp.store import limits as store
from tests.kits.seed import seed
from tests.kits.servers import spawn_server
from tests.kits.store import store_of

pytestmark = [pytest.mark.e2e, pytest.mark.backends]

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


def test_three_replicas_share_one_rpm_and_one_record(home: Path, upstream: str, fake, store_backend: str) -> None:
    seed(home, base_url=upstream, served=["m1", "m2", "m3"], collections={"trio": ["m1", "m2", "m3"]})
    anyio.run(_prepare, home)
    env = {"BENCH_SEAT_TIMEOUT": "5"}
    with spawn_server(home, **env) as one, spawn_server(home, **env) as two, spawn_server(home, **env) as three:
        assert len({one, two, three}) == 3
        seats = anyio.run(_panels, [one, two, three], 2)
        assert len(seats) == 18
        assert fake.count() == RPM, f"together the three servers sent exactly the per-minute limit ({store_backend})"
        answered = [s for s in seats if s["status"] == "ok"]
        assert len(answered) == RPM

        judged = {s["call"]: i % 2 == 0 for i, s in enumerate(answered)}
        for call, useful in judged.items():  # each verdict through the first replica
            r = httpx.post(one + "/bench/verdict", json={"call": call, "useful": useful}, timeout=30)
            assert r.status_code == 200 and r.json()["written"] is True, r.text
        again = httpx.post(two + "/bench/verdict", json={"call": next(iter(judged)), "useful": judged[next(iter(judged))]},
                           timeout=30)
        assert again.status_code == 200 and again.json()["written"] is False  # the second replica sees it
        record = httpx.get(three + "/bench/record", params={"collection": "bench/trio"}, timeout=30)
        assert record.status_code == 200, record.text
        counts = record.json()["aliases"]
        assert sum(a["useful"] for a in counts.values()) == sum(judged.values())
        assert sum(a["judged"] for a in counts.values()) == RPM  # read through the third replica
