"""Health evidence kept between reads (``store/health_evidence.py``): two rows a model whose ages
make a rating weigh them as the model's days weigh, caught up with the rows changed since (the
tally's ``seq``) in one statement. Every rating is checked against the per-day formula computed
here from ``health_days()``: same weighed counts (to float rounding), same raw counts. On SQLite
and on PostgreSQL."""

from __future__ import annotations

import itertools
import random
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from benchwarmers_mcp.engine import learning
from benchwarmers_mcp.engine.ratings import Evidence, Rating, RatingPolicy, rate_all
from benchwarmers_mcp.store import Database, calls, health_evidence, migrations, routes
from benchwarmers_mcp.store import ratings as rating_store
from benchwarmers_mcp.store.calls import PanelRecord, SeatRecord
from benchwarmers_mcp.store.db import Reader
from benchwarmers_mcp.store.routes import TurnRecord
from tests.kits.store import Statements, store_of

pytestmark = [pytest.mark.anyio, pytest.mark.backends]

DAY = 86400.0
TODAY = 20_834  # in UTC days since 1970
START = TODAY * DAY  # the start of today
H = 90 * DAY
MODELS = ["m0", "m1", "m2", "m3", "ghost"]  # ghost never makes a call
HALF_LIVES = (90.0, 30.0, 0.0)  # days; 0: no decay


class Caller:
    """Writes calls as the product does: a seat of a panel, or a route turn (the triggers tally them)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.n = itertools.count()

    async def open(self) -> Caller:
        await calls.create_panel(self.db, PanelRecord("p1", START, "bench/c", "general", "default", "all", "local",
                                                      None, "q", []))
        return self

    async def call(self, alias: str, at: float, status: str = "ok", *, turn: bool = False) -> None:
        i = next(self.n)
        if turn:
            await routes.record_turn(self.db, TurnRecord("conv", i, status, 0.1, call=f"r{i}", alias=alias, at=at))
        else:
            await calls.record_seat(self.db, SeatRecord(f"c{i}", "p1", f"s{i}", alias, alias, status, 0.1, at=at))

    async def some(self, rng: random.Random, n: int, low: float, high: float) -> None:
        """``n`` calls of random models at random moments in [low, high), some failed, some refused
        (not health: the pacing refused them)."""
        for _ in range(n):
            status = rng.choice(("ok", "ok", "ok", "error", "timeout", "refused"))
            await self.call(rng.choice(MODELS[:-1]), rng.uniform(low, high), status, turn=rng.random() < 0.3)


@pytest.fixture
async def pair(home: Path) -> AsyncIterator[tuple[Database, Database]]:
    """Two stores on one database, as two processes have."""
    async with store_of(home) as a, store_of(home) as b:
        yield a, b


def per_day(days: list[tuple[str, int, int, int]], now: float) -> list[Evidence]:
    """The evidence as it was read before: a row per model and day, aged from the day's middle."""
    return [Evidence(alias, "health", good=ok, bad=failed, age=max(0.0, now - (day + 0.5) * DAY))
            for alias, day, ok, failed in days]


def same(kept: dict[str, Rating], expected: dict[str, Rating]) -> None:
    assert kept.keys() == expected.keys()
    for alias, r in expected.items():
        k = kept[alias]
        assert k.health_ok == pytest.approx(r.health_ok, rel=1e-9), alias
        assert k.health_failed == pytest.approx(r.health_failed, rel=1e-9), alias
        assert k.counts == r.counts, alias
        assert (k.fresh(), k.status) == (r.fresh(), r.status), alias


async def check(db: Reader, now: float) -> None:
    """Every model rated from kept (or, in a transaction, fresh) evidence as from the tally's days,
    for each half-life."""
    days = await health_evidence.health_days(db)
    for half_life in HALF_LIVES:
        policy = RatingPolicy(half_life_days=half_life)
        evidence = await learning.load_evidence(db, now, MODELS, policy=policy)
        assert len(evidence) <= 2 * len(MODELS) and all(e.source == "health" for e in evidence)
        same(rate_all(MODELS, evidence, policy=policy), rate_all(MODELS, per_day(days, now), policy=policy))


@pytest.mark.parametrize("seed", [1, 2])
async def test_kept_evidence_rates_every_model_as_its_days_do(pair: tuple[Database, Database], seed: int) -> None:
    """Random histories; between reads, calls today, calls written late into past days and
    future-dated ones; reads before and after noon (today's row aged 0, then not), across two day
    rollovers, by the store that writes and by another."""
    a, b = pair
    rng = random.Random(seed)
    caller = await Caller(a).open()
    await caller.some(rng, 120, START - 150 * DAY, START)
    for moment in (START + 0.3 * DAY, START + 0.8 * DAY, START + 1.1 * DAY, START + 1.9 * DAY, START + 4.6 * DAY):
        for reader in (b, a):
            await check(reader, moment)
        await caller.some(rng, 6, moment - 0.2 * DAY, moment)  # today's (or, early in a day, yesterday's)
        await caller.some(rng, 3, moment - 60 * DAY, moment - DAY)  # late, into past days
        await caller.some(rng, 2, moment + 0.5 * DAY, moment + 3 * DAY)  # future-dated
        for reader in (b, a):
            await check(reader, moment)
    await check(b, START + 0.9 * DAY)  # back to an earlier day: read whole again


async def test_a_read_with_nothing_changed_is_one_statement(pair: tuple[Database, Database]) -> None:
    a, b = pair
    caller = await Caller(a).open()
    for back in range(40):
        await caller.call("m0", START - back * DAY + 60)
        await caller.call("m1", START - back * DAY + 60, "error")
    now = START + 0.6 * DAY
    reads = Statements(b)
    first = await rating_store.evidence(b, now, sources=("health",), half_life=H)
    assert len(first) == 2
    n, again = await reads.cost(rating_store.evidence(b, now + 60, sources=("health",), half_life=H))
    assert n == 1 and "seq >" in reads.sql[-1], reads.sql[-n:]
    assert {(r.alias, r.good, r.bad) for r in again} == {("m0", 40, 0), ("m1", 0, 40)}

    await caller.call("m0", now)  # today's row changes: still one statement, that row read
    n, later = await reads.cost(rating_store.evidence(b, now + 120, sources=("health",), half_life=H))
    assert n == 1 and "seq >" in reads.sql[-1]
    assert {(r.alias, r.good, r.bad) for r in later} == {("m0", 41, 0), ("m1", 0, 40)}
    days = await health_evidence.health_days(b)
    policy = RatingPolicy(half_life_days=90)
    same(rate_all(MODELS, [Evidence(r.alias, r.source, good=r.good, bad=r.bad, age=r.age) for r in later],
                  policy=policy), rate_all(MODELS, per_day(days, now + 120), policy=policy))

    n, _ = await reads.cost(learning.ratings_for(b, "bench/c", "general", MODELS, now=now + 180))
    assert sum("health_tally" in sql for sql in reads.sql[-n:]) == 1, "a rating read: one statement of health"


async def test_a_call_written_late_into_a_past_day_by_another_store_is_in_the_next_read(
        pair: tuple[Database, Database]) -> None:
    a, b = pair
    caller = await Caller(a).open()
    for back in range(1, 30):
        await caller.call("m0", START - back * DAY + 60)
        await caller.call("m1", START - back * DAY + 60)
    now = START + 0.7 * DAY
    await check(b, now)
    await caller.call("m1", START - 12 * DAY, "timeout")  # a call that finished late, on its own day
    await caller.call("m2", START - 3 * DAY)  # a model's first call, late too
    reads = Statements(b)
    n, rows = await reads.cost(rating_store.evidence(b, now, sources=("health",), half_life=H))
    assert n == 2 and "seq >" in reads.sql[-2] and "IN" in reads.sql[-1], "the changed models read again"
    assert {(r.alias, r.good, r.bad) for r in rows} == {("m0", 29, 0), ("m1", 29, 0), ("m1", 0, 1), ("m2", 1, 0)}
    n, again = await reads.cost(rating_store.evidence(b, now, sources=("health",), half_life=H))
    assert n == 1 and again == rows, "the changes are folded in: not read again"
    await check(b, now)


async def test_inside_a_transaction_the_tally_is_read_afresh(pair: tuple[Database, Database]) -> None:
    a, b = pair
    caller = await Caller(a).open()
    for back in range(10):
        await caller.call("m0", START - back * DAY + 60)
    now = START + 0.4 * DAY
    before = await rating_store.evidence(b, now, sources=("health",), half_life=H)
    with pytest.raises(LookupError):
        async with b.transaction() as tx:
            await rating_store.tally_many(tx, [("m0", TODAY - 20, 3, 2), ("m3", TODAY - 1, 1, 0)])
            await check(tx, now)  # its own uncommitted rows, compressed as kept ones are
            inside = await rating_store.evidence(tx, now, sources=("health",), aliases=["m0", "m3"], half_life=H)
            assert {(r.alias, r.good, r.bad) for r in inside} == {("m0", 13, 0), ("m0", 0, 2), ("m3", 1, 0)}
            raise LookupError("rolled back")
    assert await rating_store.evidence(b, now, sources=("health",), half_life=H) == before, "nothing kept from it"
    await check(b, now)


async def test_a_store_from_before_the_seq_has_its_calls_read_and_new_ones_added(home: Path) -> None:
    """Opened without the migration (its tally rows then have no ``seq``), calls written; opened
    with it: the calls are in the evidence, and calls written after (today's, late and by another
    store) are in the next read of the same store."""
    rng = random.Random(7)
    with pytest.MonkeyPatch.context() as before:
        before.setattr(migrations, "MIGRATIONS",
                       [m for m in migrations.MIGRATIONS if m[0] != "ratings_003_health_tally_seq"])
        async with store_of(home) as old:
            await (await Caller(old).open()).some(rng, 60, START - 40 * DAY, START + 0.5 * DAY)
    now = START + 0.75 * DAY
    async with store_of(home) as a, store_of(home) as b:
        await check(b, now)
        caller = Caller(a)
        caller.n = itertools.count(1000)
        await caller.some(rng, 5, START, now)
        await caller.some(rng, 5, START - 30 * DAY, START)
        await check(b, now)
        await check(a, now)
        async with a.transaction() as tx:
            await rating_store.tally_many(tx, [("m3", TODAY - 200, 9, 1)])  # a bulk import into an empty day
        await check(b, now)
