"""The SQLite backend's scheduling: statements run on the event loop, except what would block it
(a long read, another process holding the write lock, bulk work), which runs in a thread and
still answers exactly as inline."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from benchwarmers_mcp.store import Database

# about a million steps of SQLite's VM: far over the inline budget on any machine
SLOW_READ = ("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)"
             " SELECT COUNT(*), SUM(i) FROM n")
ROWS = 400_000


class Ticker:
    """Counts turns of the event loop while it runs: zero means something held the loop."""

    def __init__(self) -> None:
        self.ticks = 0
        self.running = True

    async def run(self) -> None:
        while self.running:
            self.ticks += 1
            await anyio.lowlevel.checkpoint()


async def _during(ticker: Ticker, work) -> object:
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
    async with Database(tmp_path / "b.db") as db:
        ticker = Ticker()
        row = await _during(ticker, lambda: db.fetchone(SLOW_READ, (ROWS,)))
        assert tuple(row) == (ROWS, ROWS * (ROWS + 1) // 2)
        assert ticker.ticks > 0  # the loop kept turning while SQLite counted
        again = Ticker()  # the same SQL goes to the thread at once the next time
        assert tuple(await _during(again, lambda: db.fetchone(SLOW_READ, (ROWS,)))) == tuple(row)
        assert again.ticks > 0
        assert (await db.fetchval("SELECT 1 + 1")) == 2  # short reads still answer


@pytest.mark.anyio
async def test_a_long_read_inside_a_transaction_keeps_the_transaction(tmp_path: Path) -> None:
    async with Database(tmp_path / "b.db") as db:
        await db.write("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
        async with db.transaction() as tx:
            await tx.execute("INSERT INTO t (v) VALUES ('kept')")
            assert tuple(await tx.fetchone(SLOW_READ, (ROWS,)))[0] == ROWS
            assert await tx.fetchval("SELECT COUNT(*) FROM t") == 1
        with pytest.raises(RuntimeError):
            async with db.transaction() as tx:
                await tx.execute("INSERT INTO t (v) VALUES ('rolled back')")
                await tx.fetchone(SLOW_READ, (ROWS,))
                raise RuntimeError("after the slow read")
        assert [r[0] for r in await db.fetchall("SELECT v FROM t ORDER BY id")] == ["kept"]


@pytest.mark.anyio
async def test_a_writer_waits_for_another_process_lock_without_holding_the_loop(tmp_path: Path) -> None:
    path = tmp_path / "b.db"
    async with Database(path) as db:
        await db.write("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
        other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        other.execute("BEGIN IMMEDIATE")  # another process's writer holds the lock
        other.execute("INSERT INTO t (v) VALUES ('other')")
        done = anyio.Event()
        ticker = Ticker()

        async def write() -> None:
            async with db.transaction() as tx:
                await tx.execute("INSERT INTO t (v) VALUES ('mine')")
            done.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(ticker.run)
            tg.start_soon(write)
            for _ in range(50):
                await anyio.sleep(0.005)
            assert not done.is_set()  # it cannot commit while the other writer holds the lock
            assert ticker.ticks > 0  # and the loop turns while it waits
            assert await db.fetchval("SELECT COUNT(*) FROM t") == 0  # reads go on meanwhile
            other.execute("COMMIT")
            await done.wait()
            ticker.running = False
        other.close()
        assert [r[0] for r in await db.fetchall("SELECT v FROM t ORDER BY id")] == ["other", "mine"]


@pytest.mark.anyio
async def test_bulk_rows_and_reads_after_commit(tmp_path: Path) -> None:
    async with Database(tmp_path / "b.db") as db:
        await db.write("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
        async with db.transaction() as tx:
            await tx.executemany("INSERT INTO t (v) VALUES (?)", ((f"r{i}",) for i in range(5000)))
            new = await tx.insert("INSERT INTO t (v) VALUES ('last')")
        assert new == 5001
        assert await db.fetchval("SELECT COUNT(*) FROM t") == 5001
        assert await db.write("UPDATE t SET v = 'x' WHERE id <= 10") == 10
        with pytest.raises(sqlite3.IntegrityError):
            await db.write("INSERT INTO t (id, v) VALUES (1, 'dup')")
        assert await db.fetchval("SELECT v FROM t WHERE id = 1") == "x"
