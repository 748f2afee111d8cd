"""Health evidence from ``health_tally``: a row per model and day that triggers keep as seats and
route turns are written (and that the migration fills from the calls made before it), so a rating
reads a model's days instead of every call it ever made. On SQLite and on PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchwarmers_mcp.store import calls, migrations, routes
from benchwarmers_mcp.store import ratings as rating_store
from benchwarmers_mcp.store.calls import PanelRecord, SeatRecord
from benchwarmers_mcp.store.db import Database
from benchwarmers_mcp.store.routes import TurnRecord
from tests.kits.store import store_of

pytestmark = [pytest.mark.anyio, pytest.mark.backends]

DAY = 86400.0
NOW = 20_834 * DAY + 0.75 * DAY  # three quarters into a day (in UTC days since 1970)


async def _calls(db: Database, panel: str, start: int = 0) -> None:
    """m1: 2 ok and 1 error today, 1 ok three days ago; m2: 1 timeout today and one refusal (not
    health: the pacing refused it, the model was never asked); a route turn of m2, ok, today, and one
    no member took (no alias)."""
    await calls.create_panel(db, PanelRecord(panel, NOW, "bench/c", "general", "default", "all", "local", None,
                                             "q", []))
    seats = [("m1", "ok", NOW - 60), ("m1", "ok", NOW - 120), ("m1", "error", NOW - 180), ("m1", "ok", NOW - 3 * DAY),
             ("m2", "timeout", NOW - 60), ("m2", "refused", NOW - 60)]
    for i, (alias, status, at) in enumerate(seats, start):
        await calls.record_seat(db, SeatRecord(f"c{i}", panel, f"s{i}", alias, alias, status, 0.1, at=at))
    await routes.record_turn(db, TurnRecord("conv", start, "ok", 0.1, call=f"r{start}", alias="m2", at=NOW - 30))
    await routes.record_turn(db, TurnRecord("conv", start + 1, "error", 0.1, at=NOW - 30))


def _health(rows: list[rating_store.EvidenceRow]) -> dict[tuple[str, float], tuple[int, int]]:
    return {(r.alias, round(r.age / DAY, 2)): (r.good, r.bad) for r in rows if r.source == "health"}


async def test_each_call_is_tallied_by_model_and_day_as_it_is_written(home: Path) -> None:
    async with store_of(home) as db:
        await _calls(db, "p1")
        found = await rating_store.evidence(db, NOW, sources=("health",))
        # aged from the middle of its day: today's at 0.25 days, three days ago at 3.25
        assert _health(found) == {("m1", 0.25): (2, 1), ("m1", 3.25): (1, 0), ("m2", 0.25): (1, 1)}
        only = await rating_store.evidence(db, NOW, sources=("health",), aliases=["m2", "m3"])
        assert _health(only) == {("m2", 0.25): (1, 1)}
        assert await rating_store.evidence(db, NOW, aliases=[]) == []
        await calls.record_seat(db, SeatRecord("c9", "p1", "s9", "m2", "m2", "ok", 0.1, at=NOW))
        assert _health(await rating_store.evidence(db, NOW, sources=("health",), aliases=["m2"])) == {
            ("m2", 0.25): (2, 1)}


async def test_the_migration_tallies_the_calls_made_before_it(home: Path) -> None:
    """A store from before the tally (its migration left out while the calls are written) has them
    counted once it opens with the migration, and new calls add to the same rows."""
    with pytest.MonkeyPatch.context() as before:
        before.setattr(migrations, "MIGRATIONS",
                       [m for m in migrations.MIGRATIONS if m[0] != "ratings_002_health_tally"])
        async with store_of(home) as db:
            await _calls(db, "p1")
    async with store_of(home) as db:
        assert _health(await rating_store.evidence(db, NOW, sources=("health",))) == {
            ("m1", 0.25): (2, 1), ("m1", 3.25): (1, 0), ("m2", 0.25): (1, 1)}
        await _calls(db, "p2", start=10)
        assert _health(await rating_store.evidence(db, NOW, sources=("health",))) == {
            ("m1", 0.25): (4, 2), ("m1", 3.25): (2, 0), ("m2", 0.25): (2, 2)}
