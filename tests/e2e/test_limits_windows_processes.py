"""A hand-set rpm holds in every sliding 60 s window, by the upstream's own clock, with two server
processes on one data folder and more calls than the limit lets through: the calls that wait in
the pacer are counted from when they are sent, not from when they were asked for (else the window
that follows lets a burst through)."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx
import pytest

from benchwarmers_mcp.store import Database, ledger
from benchwarmers_mcp.store import collections as cs
from benchwarmers_mcp.store import limits as store
from tests.kits.seed import seed
from tests.kits.servers import spawn_server

pytestmark = pytest.mark.e2e

RPM = 3
# 3 go at once; 3 wait for the next window (60 s and the pacer's 2 s of slack later); the last 3
# would have to wait for the window after that (124 s), past their 90 s deadline, so they are refused
# then. Were a call that waited counted from when it was asked for, the 3 that went at 62 s would
# count at 0 s and the last 3 would be let through with them: 6 calls within 60 s.
ASKED = 9
SENT = 2 * RPM
SEAT_TIMEOUT = "90"
SEAT_WAIT = SEAT_TIMEOUT  # seats wait for the next window here (a panel's would be refused after 5 s)


async def _prepare(home: Path) -> None:
    async with Database(home / "benchwarmers.db") as db:
        await cs.save_gateway_settings(db, cs.GatewaySettings(max_calls=1, max_explorers=0))
        await store.set_limit(db, "connection", "fake", "rpm", RPM)


async def _ask_all(bases: list[str]) -> list[dict]:
    seats: list[dict] = []

    async def one(base: str, n: int) -> None:
        async with httpx.AsyncClient(timeout=300) as http:
            reply = await http.post(base + "/v1/chat/completions", json={
                "model": "bench/solo", "messages": [{"role": "user", "content": f"question {n}"}]})
            reply.raise_for_status()
            seats.extend(reply.json()["bench"]["seats"])

    async with anyio.create_task_group() as tg:
        for n in range(ASKED):
            tg.start_soon(one, bases[n % len(bases)], n)
    return seats


async def _ledger(home: Path) -> list[ledger.UsageRow]:
    async with Database(home / "benchwarmers.db") as db:
        return await ledger.rows(db)


def test_a_hand_set_rpm_holds_in_every_window_across_two_processes(home: Path, upstream: str, fake):
    seed(home, base_url=upstream, served=["m1"], collections={"solo": ["m1"]})
    anyio.run(_prepare, home)
    with spawn_server(home, BENCH_SEAT_TIMEOUT=SEAT_TIMEOUT, BENCH_SEAT_WAIT=SEAT_WAIT) as one, \
            spawn_server(home, BENCH_SEAT_TIMEOUT=SEAT_TIMEOUT, BENCH_SEAT_WAIT=SEAT_WAIT) as two:
        seats = anyio.run(_ask_all, [one, two])
    arrivals = sorted(call.at for call in fake.calls)
    spans = [round(arrivals[i + RPM] - arrivals[i], 2) for i in range(len(arrivals) - RPM)]
    assert all(span >= 60 for span in spans), f"more than {RPM} calls reached the upstream within 60 s: {spans}"
    assert len(arrivals) == SENT, "every call that could be sent before its deadline was sent"
    answered = [s for s in seats if s["status"] == "ok"]
    refused = [s for s in seats if s["status"] == "rate_limited"]
    assert len(answered) == SENT and len(refused) == ASKED - SENT
    assert all("not sent; paced by the bench" in s["error"] for s in refused)
    rows = [r for r in anyio.run(_ledger, home) if r.attempts]
    sent = sorted(r.t for r in rows)
    assert len(sent) == SENT
    gaps = [arrived - t for t, arrived in zip(sent, arrivals, strict=True)]
    assert all(0 <= gap < 30 for gap in gaps), f"the ledger times a call from when it was let go, not asked: {gaps}"
