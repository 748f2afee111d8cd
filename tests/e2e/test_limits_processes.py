"""Two server processes on one data folder never exceed a per-minute limit together: the windows
and the calls in flight live in the store, and admission is one BEGIN IMMEDIATE transaction."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from benchwarmers_mcp.store import ledger
from tests.kits.replicas import limit_fake, panels
from tests.kits.seed import seed
from tests.kits.servers import spawn_server
from tests.kits.store import store_of

pytestmark = pytest.mark.e2e

RPM = 4


async def _ledger(home: Path) -> list[ledger.UsageRow]:
    async with store_of(home) as db:
        return await ledger.rows(db)


def test_two_processes_share_one_rpm(home: Path, upstream: str, fake):
    seed(home, base_url=upstream, served=["m1", "m2", "m3"], collections={"trio": ["m1", "m2", "m3"]})
    anyio.run(limit_fake, home, RPM)
    with spawn_server(home, BENCH_SEAT_TIMEOUT="5") as one, spawn_server(home, BENCH_SEAT_TIMEOUT="5") as two:
        assert one != two
        seats = anyio.run(panels, [one, two], 3)
    assert len(seats) == 18
    assert fake.count() == RPM, "together the two servers sent exactly the per-minute limit, no more"
    answered = [s for s in seats if s["status"] == "ok"]
    refused = [s for s in seats if s["status"] == "rate_limited"]
    assert len(answered) == RPM and len(refused) == 18 - RPM
    assert all("not sent; paced by the bench" in s["error"] for s in refused)
    rows = anyio.run(_ledger, home)
    assert sorted((r.status, r.attempts) for r in rows) == [("ok", 1)] * RPM + [("refused", 0)] * (18 - RPM)
