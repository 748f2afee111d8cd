"""The SQLite backend's scheduling: statements run on the event loop, except what would block it
(a long read, another process holding the write lock, bulk rows), which runs in a thread and
still answers exactly as inline. Driven through the usage ledger's store functions."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from benchwarmers_mcp.store import Database, ledger

ROWS = 150_000  # the ledger's totals over this many rows take far more than the inline budget


def _row(i: int) -> ledger.UsageRow:
    return ledger.UsageRow(alias=f"m{i % 3}", connection=f"c{i % 2}", endpoint="e", served="m", status="ok",
                           tokens_in=1, tokens_out=2, t=1000.0 + i)


async def _filled(path: Path, rows: int = ROWS) -> Database:
    db = await Database(path).open()
    async with db.transaction() as tx:
        await ledger.insert_many(tx, (_row(i) for i in range(rows)))
    return db


class Ticker:
    """Counts turns of the event loop: zero means something held the loop all along."""

    def __init__(self) -> None:
        self.ticks = 0
        self.running = True

    async def run(self) -> None:
        while self.running:
            self.ticks += 1
            await anyio.lowlevel.checkpoint()


async def _during(ticker: Ticker, work: Callable[[], Awaitable[Any]]) -> Any:
    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker.run)
        await anyio.lowlevel.checkpoint()
        ticker.ticks = 0
        try:
            return await work()
        finally:
            ticker.running = False


@pytest.mark.anyio
async def test_a_long_read_runs_off_the_loop_and_answers_in_full(tmp_path: Path) -> None:
    db = await _filled(tmp_path / "b.db")
    try:
        expected = {"c0": ROWS // 2, "c1": ROWS // 2}
        ticker = Ticker()
        totals = await _during(ticker, lambda: ledger.totals(db))
        assert {c: t["calls"] for c, t in totals.items()} == expected
        assert totals["c0"]["tokens_out"] == ROWS  # 2 tokens a row, half the rows
        assert ticker.ticks > 0  # the loop kept turning while SQLite added up
        again = Ticker()  # the same SQL goes to the thread at once the next time, same answer
        assert await _during(again, lambda: ledger.totals(db)) == totals
        assert again.ticks > 0
        assert {c: t["calls"] for c, t in (await ledger.totals(db, since=1000.0 + ROWS - 4)).items()} == \
            {"c0": 2, "c1": 2}
    finally:
        await db.close()


@pytest.mark.anyio
async def test_a_long_read_inside_a_transaction_keeps_the_transaction(tmp_path: Path) -> None:
    db = await _filled(tmp_path / "b.db")
    try:
        async with db.transaction() as tx:
            await ledger.insert(tx, _row(1))
            inside = await ledger.totals(tx)  # type: ignore[arg-type]  (a Transaction reads as a Database)
            assert inside["c1"]["calls"] == ROWS // 2 + 1  # it sees its own row
        with pytest.raises(RuntimeError):
            async with db.transaction() as tx:
                await ledger.insert(tx, _row(1))
                await ledger.totals(tx)  # type: ignore[arg-type]
                raise RuntimeError("after the slow read")
        assert (await ledger.totals(db))["c1"]["calls"] == ROWS // 2 + 1  # the first kept, the second not
    finally:
        await db.close()


@pytest.mark.anyio
async def test_a_writer_waits_for_another_process_lock_without_holding_the_loop(tmp_path: Path) -> None:
    path = tmp_path / "b.db"
    async with Database(path) as db, Database(path) as other:  # two writers, as two processes have
        done = anyio.Event()
        release = anyio.Event()
        ticker = Ticker()

        async def hold() -> None:
            async with other.transaction() as tx:
                await ledger.insert(tx, _row(0))
                await release.wait()

        async def write() -> None:
            await ledger.append(db, _row(1))
            done.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(ticker.run)
            tg.start_soon(hold)
            for _ in range(20):
                await anyio.lowlevel.checkpoint()
            tg.start_soon(write)
            for _ in range(20):
                await anyio.sleep(0.01)
            assert not done.is_set()  # it cannot commit while the other writer holds the lock
            assert ticker.ticks > 0  # and the loop turns while it waits
            assert await ledger.totals(db) == {}  # reads go on meanwhile, and see only commits
            release.set()
            await done.wait()
            ticker.running = False
        assert {c: t["calls"] for c, t in (await ledger.totals(db)).items()} == {"c0": 1, "c1": 1}


@pytest.mark.anyio
async def test_a_read_on_the_database_from_the_transactions_own_task_sees_its_rows(tmp_path: Path) -> None:
    async with Database(tmp_path / "b.db") as db:
        seen_elsewhere: list[dict[str, Any]] = []

        async def elsewhere() -> None:
            seen_elsewhere.append(await ledger.totals(db))

        async with db.transaction() as tx:
            await ledger.insert(tx, _row(1))
            assert (await ledger.totals(db))["c1"]["calls"] == 1  # this task: inside its transaction
            async with anyio.create_task_group() as tg:
                tg.start_soon(elsewhere)
        assert seen_elsewhere == [{}]  # another task: only what is committed
        assert (await ledger.totals(db))["c1"]["calls"] == 1


@pytest.mark.anyio
async def test_a_short_transaction_holds_the_writer_for_no_turn_of_the_loop(tmp_path: Path) -> None:
    """Its statements run one after another: no other task runs between them, so no other write
    queues behind the lock (a route turn's claim is four statements)."""
    async with Database(tmp_path / "b.db") as db:
        ticker = Ticker()

        async def claim() -> int:
            async with db.transaction() as tx:
                ticker.ticks = 0
                for i in range(4):
                    await ledger.insert(tx, _row(i))
                    await tx.fetchall("SELECT 1")
                return ticker.ticks

        assert await _during(ticker, claim) == 0
        assert {c: t["calls"] for c, t in (await ledger.totals(db)).items()} == {"c0": 2, "c1": 2}


@pytest.mark.anyio
async def test_a_long_transaction_still_lets_the_loop_turn(tmp_path: Path) -> None:
    async with Database(tmp_path / "b.db") as db:
        ticker = Ticker()

        async def bulk() -> int:
            async with db.transaction() as tx:
                ticker.ticks = 0
                for i in range(3000):  # one by one: several milliseconds of statements
                    await ledger.insert(tx, _row(i))
                return ticker.ticks

        assert await _during(ticker, bulk) > 0
        assert sum(t["calls"] for t in (await ledger.totals(db)).values()) == 3000


@pytest.mark.anyio
async def test_a_write_cancelled_at_its_checkpoint_writes_nothing(tmp_path: Path) -> None:
    """Cancelled before its statement ran: nothing in the store, and the caller hears of it; a write
    that returns is in the store."""
    async with Database(tmp_path / "b.db") as db:
        with anyio.CancelScope() as scope:
            scope.cancel()
            await db.write(ledger.INSERT_SQL, ledger._values(_row(1)))
            pytest.fail("the cancelled write returned")
        assert await ledger.totals(db) == {}
        with anyio.CancelScope() as scope:
            scope.cancel()
            async with db.transaction() as tx:
                await ledger.insert(tx, _row(1))
        assert await ledger.totals(db) == {}
        await ledger.append(db, _row(1))
        assert (await ledger.totals(db))["c1"]["calls"] == 1
