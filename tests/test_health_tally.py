"""Health evidence from ``health_tally``: a row per model and day that triggers keep as seats and
route turns are written (and that the migration fills from the calls made before it), so a rating
reads a model's days instead of every call it ever made; ``evidence()`` gives them as two rows a model
(answered, failed), each at the age where its raw count weighs what the model's days weigh. On SQLite and
on PostgreSQL."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from benchwarmers_mcp.store import calls, health_evidence, migrations, routes
from benchwarmers_mcp.store import ratings as rating_store
from benchwarmers_mcp.store.calls import PanelRecord, SeatRecord
from benchwarmers_mcp.store.db import Database
from benchwarmers_mcp.store.routes import TurnRecord
from tests.kits.store import store_of

pytestmark = [pytest.mark.anyio, pytest.mark.backends]

DAY = 86400.0
TODAY = 20_834  # in UTC days since 1970
NOW = TODAY * DAY + 0.75 * DAY  # three quarters into the day
H = 90 * DAY  # the half-life evidence is read for


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


def _days(rows: list[tuple[str, int, int, int]]) -> dict[tuple[str, int], tuple[int, int]]:
    """The tally's rows by model and day (days before today, 0 for today)."""
    return {(alias, TODAY - day): (ok, failed) for alias, day, ok, failed in rows}


def _health(rows: list[rating_store.EvidenceRow]) -> dict[tuple[str, str], tuple[int, float]]:
    """Health evidence by model and kind (answered, failed): its raw count and its age in days."""
    out: dict[tuple[str, str], tuple[int, float]] = {}
    for r in rows:
        assert r.source == "health" and (r.good == 0) != (r.bad == 0), r
        kind = "ok" if r.good else "failed"
        assert (r.alias, kind) not in out, "one row a model and kind"
        out[(r.alias, kind)] = (r.good or r.bad, r.age / DAY)
    return out


def _aged(*rows: tuple[int, float], half_life: float = H) -> tuple[int, float]:
    """Calls ``(count, age in days)`` as one row: their raw count, and the age at which it weighs
    what they weigh together (``0.5 ** (age / half_life)`` each)."""
    raw = sum(n for n, _ in rows)
    weighed = sum(n * 0.5 ** (age * DAY / half_life) for n, age in rows)
    return raw, -half_life * math.log2(weighed / raw) / DAY


def _close(found: dict[tuple[str, str], tuple[int, float]], expected: dict[tuple[str, str], tuple[int, float]]) -> bool:
    """The same rows, counts exact and ages to float rounding."""
    return found.keys() == expected.keys() and all(
        found[k][0] == expected[k][0] and found[k][1] == pytest.approx(expected[k][1], rel=1e-9, abs=1e-9)
        for k in expected)


async def test_each_call_is_tallied_by_model_and_day_as_it_is_written(home: Path) -> None:
    async with store_of(home) as db:
        await _calls(db, "p1")
        assert _days(await health_evidence.health_days(db)) == {
            ("m1", 0): (2, 1), ("m1", 3): (1, 0), ("m2", 0): (1, 1)}
        assert _days(await health_evidence.health_days(db, ["m2", "m3"])) == {("m2", 0): (1, 1)}
        assert await health_evidence.health_days(db, []) == []
        await calls.record_seat(db, SeatRecord("c9", "p1", "s9", "m2", "m2", "ok", 0.1, at=NOW))
        assert _days(await health_evidence.health_days(db, ["m2"])) == {("m2", 0): (2, 1)}


async def test_evidence_is_each_models_calls_at_their_equivalent_age(home: Path) -> None:
    """Aged from the middle of its day: today's calls at 0.25 days, three days ago at 3.25; m1's
    three answered calls as one row, at the age where 3 weighs what 2 at 0.25 and 1 at 3.25 weigh."""
    async with store_of(home) as db:
        await _calls(db, "p1")
        found = await rating_store.evidence(db, NOW, sources=("health",), half_life=H)
        assert _close(_health(found), {("m1", "ok"): _aged((2, 0.25), (1, 3.25)), ("m1", "failed"): (1, 0.25),
                                       ("m2", "ok"): (1, 0.25), ("m2", "failed"): (1, 0.25)})
        assert 0.25 < _health(found)[("m1", "ok")][1] < 3.25
        only = await rating_store.evidence(db, NOW, sources=("health",), aliases=["m2", "m3"], half_life=H)
        assert _close(_health(only), {("m2", "ok"): (1, 0.25), ("m2", "failed"): (1, 0.25)})
        assert await rating_store.evidence(db, NOW, aliases=[], half_life=H) == []
        shorter = await rating_store.evidence(db, NOW, sources=("health",), half_life=30 * DAY)
        assert _close(_health(shorter), {**_health(found), ("m1", "ok"): _aged((2, 0.25), (1, 3.25), half_life=30 * DAY)})
        undecayed = await rating_store.evidence(db, NOW, sources=("health",), half_life=0)
        assert _health(undecayed) == {("m1", "ok"): (3, 0.0), ("m1", "failed"): (1, 0.0), ("m2", "ok"): (1, 0.0),
                                      ("m2", "failed"): (1, 0.0)}, "no decay: every age is 0"
        await calls.record_seat(db, SeatRecord("c9", "p1", "s9", "m2", "m2", "ok", 0.1, at=NOW))
        again = await rating_store.evidence(db, NOW, sources=("health",), aliases=["m2"], half_life=H)
        assert _close(_health(again), {("m2", "ok"): (2, 0.25), ("m2", "failed"): (1, 0.25)})


async def test_the_migration_tallies_the_calls_made_before_it(home: Path) -> None:
    """A store from before the tally (its migrations left out while the calls are written) has them
    counted once it opens with the migrations, and new calls add to the same rows."""
    with pytest.MonkeyPatch.context() as before:
        before.setattr(migrations, "MIGRATIONS", [m for m in migrations.MIGRATIONS if m[0] not in (
            "ratings_002_health_tally", "ratings_003_health_tally_seq")])
        async with store_of(home) as db:
            await _calls(db, "p1")
    async with store_of(home) as db:
        assert _days(await health_evidence.health_days(db)) == {
            ("m1", 0): (2, 1), ("m1", 3): (1, 0), ("m2", 0): (1, 1)}
        first = _health(await rating_store.evidence(db, NOW, sources=("health",), half_life=H))
        assert first[("m1", "ok")][0] == 3 and first[("m2", "failed")][0] == 1
        await _calls(db, "p2", start=10)
        assert _days(await health_evidence.health_days(db)) == {
            ("m1", 0): (4, 2), ("m1", 3): (2, 0), ("m2", 0): (2, 2)}
        assert _close(_health(await rating_store.evidence(db, NOW, sources=("health",), half_life=H)), {
            ("m1", "ok"): _aged((4, 0.25), (2, 3.25)), ("m1", "failed"): (2, 0.25), ("m2", "ok"): (2, 0.25),
            ("m2", "failed"): (2, 0.25)})
