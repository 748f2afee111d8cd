"""Verdict evidence kept between reads (``store.ratings``): read again when a verdict is added by
any process, or when a verdict moves to an older age bucket; never stale. On both backends."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchwarmers_mcp.context import Access
from benchwarmers_mcp.store import calls, verdicts
from benchwarmers_mcp.store import ratings as rating_store
from benchwarmers_mcp.store.calls import PanelRecord, SeatRecord
from benchwarmers_mcp.store.db import Database
from benchwarmers_mcp.store.verdicts import Verdict
from tests.kits.store import store_of

pytestmark = [pytest.mark.anyio, pytest.mark.backends]

DAY = 86400.0
H = 90 * DAY  # the half-life evidence is read for (health only)
T0 = 1_800_000_000.0
LOCAL = Access.unscoped()


async def _seats(db: Database, n: int) -> list[str]:
    await calls.create_panel(db, PanelRecord("p1", T0, "bench/c", "general", "default", "all", "local", None, "q", []))
    for i in range(n):
        await calls.record_seat(db, SeatRecord(f"c{i}", "p1", f"s{i}", f"m{i % 2}", f"m{i % 2}", "ok", 0.1, at=T0))
    return [f"c{i}" for i in range(n)]


def _panel(rows: list[rating_store.EvidenceRow]) -> dict[tuple[str, float], tuple[int, int]]:
    return {(r.alias, r.age / DAY): (r.good, r.bad) for r in rows if r.source == "panel"}


async def test_a_verdict_from_another_process_is_in_the_next_read(home: Path) -> None:
    async with store_of(home) as one, store_of(home) as two:  # two processes on one store
        c0, c1, c2 = await _seats(one, 3)
        await verdicts.record(one, Verdict(c0, True, at=T0), access=LOCAL)
        assert _panel(await rating_store.evidence(one, T0 + 10, half_life=H)) == {("m0", 0.5): (1, 0)}
        await verdicts.record(two, Verdict(c1, False, at=T0 + 5), access=LOCAL)
        assert _panel(await rating_store.evidence(one, T0 + 20, half_life=H)) == {("m0", 0.5): (1, 0), ("m1", 0.5): (0, 1)}
        await verdicts.record(two, Verdict(c0, False, at=T0 + 6), access=LOCAL)  # the latest line counts
        assert _panel(await rating_store.evidence(one, T0 + 30, aliases=["m0"], half_life=H)) == {("m0", 0.5): (0, 1)}
        assert _panel(await rating_store.evidence(one, T0 + 30, aliases=["m2"], half_life=H)) == {}


async def test_a_verdict_ages_into_the_next_bucket_on_time(home: Path) -> None:
    async with store_of(home) as db:
        (c0, c1) = await _seats(db, 2)
        await verdicts.record(db, Verdict(c0, True, at=T0), access=LOCAL)
        await verdicts.record(db, Verdict(c1, True, at=T0 + DAY / 2), access=LOCAL)
        assert _panel(await rating_store.evidence(db, T0 + DAY / 2, half_life=H)) == {("m0", 0.5): (1, 0), ("m1", 0.5): (1, 0)}
        assert _panel(await rating_store.evidence(db, T0 + DAY - 1, half_life=H)) == {("m0", 0.5): (1, 0), ("m1", 0.5): (1, 0)}
        assert _panel(await rating_store.evidence(db, T0 + DAY, half_life=H)) == {("m0", 1.5): (1, 0), ("m1", 0.5): (1, 0)}
        assert _panel(await rating_store.evidence(db, T0 + 1.5 * DAY, half_life=H)) == {("m0", 1.5): (1, 0), ("m1", 1.5): (1, 0)}
        # an earlier moment than the one read last (a simulated clock, a test): read again
        assert _panel(await rating_store.evidence(db, T0 + DAY / 2 + 10, half_life=H)) == {("m0", 0.5): (1, 0), ("m1", 0.5): (1, 0)}
