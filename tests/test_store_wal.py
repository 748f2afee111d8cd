"""Issue 29, item 2: the SQLite WAL stays bounded under steady writes, whichever way they come
(``write()``, ``record()``, ``transaction()``) and whichever connection makes them (two
``Database`` objects on one file are two writers with a lock each, as two processes are), and no
commit waits for a checkpoint to run.

Bounded by bytes after a number of writes, never by time: the writers go in rounds, and between
rounds the test waits for each store's checkpoint under way (if any) to end, so how fast the
machine runs the checkpoints' threads decides nothing."""

from __future__ import annotations

import random
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from benchwarmers_mcp.store import Database, sqlite

pytestmark = pytest.mark.anyio

LIMIT = 64 * 10**6  # the bound on the WAL under any steady load
ROWS = 256
BODY = 3000  # bytes a row: a page each, so every row a statement updates is a page in the WAL
UPDATE = "UPDATE pad SET body = ? WHERE id = ?"
ROUNDS, WRITERS, EACH = 90, 3, 8  # a round: WRITERS tasks on each store, each EACH times a write, record, transaction
PER_TRANSACTION = 6


def _wal(path: Path) -> int:
    wal = path.with_name(path.name + "-wal")
    return wal.stat().st_size if wal.exists() else 0


async def _writer(db: Database, rnd: random.Random) -> None:
    """``EACH`` times: one ``write()``, one ``record()`` and one transaction of several rows."""
    for _ in range(EACH):
        await db.write(UPDATE, (rnd.randbytes(BODY), rnd.randrange(ROWS)))
        await db.record(UPDATE, (rnd.randbytes(BODY), rnd.randrange(ROWS)))
        async with db.transaction() as tx:
            for _ in range(PER_TRANSACTION):
                await tx.execute(UPDATE, (rnd.randbytes(BODY), rnd.randrange(ROWS)))


async def _settled(db: Database) -> None:
    """Wait for the store's checkpoint under way, if any, to end (a wait on its task, not on time)."""
    wal = getattr(db, "_wal", None)
    if wal is not None:
        await wal.settle()


async def test_the_wal_stays_bounded_under_steady_writes_from_two_writers(tmp_path: Path) -> None:
    path = tmp_path / "wal.db"
    rnd = random.Random(29)
    async with Database(path) as db, Database(path) as other:
        await db.write("CREATE TABLE pad (id INTEGER PRIMARY KEY, body BLOB NOT NULL)")
        async with db.transaction() as tx:
            await tx.executemany("INSERT INTO pad (id, body) VALUES (?, ?)",
                                 [(i, rnd.randbytes(BODY)) for i in range(ROWS)])
        sizes = []
        for _ in range(ROUNDS):
            async with anyio.create_task_group() as tg:
                for store in (db, other):
                    for _ in range(WRITERS):
                        tg.start_soon(_writer, store, random.Random(rnd.random()))
            await _settled(db)
            await _settled(other)
            sizes.append(_wal(path))
        written = ROUNDS * 2 * WRITERS * EACH * (2 + PER_TRANSACTION) * (4096 + 24)  # a frame per row updated
        assert written > 2 * LIMIT  # without checkpoints that restart it, the WAL would be this long
        assert max(sizes) < LIMIT, [round(s / 1e6, 1) for s in sizes]
        assert await db.fetchval("SELECT COUNT(*) FROM pad") == ROWS
        assert await other.fetchval("PRAGMA integrity_check") == "ok"


async def test_a_commit_that_starts_a_checkpoint_does_not_wait_for_it(tmp_path: Path) -> None:
    """The commit that makes a checkpoint due returns with the checkpoint not yet begun: it runs
    in a task of its own, whichever way the commit came."""
    async with Database(tmp_path / "wal.db") as db:
        assert isinstance(db, sqlite.SqliteDatabase) and db._wal is not None
        await db.write("CREATE TABLE pad (id INTEGER PRIMARY KEY, body BLOB NOT NULL)")
        insert = "INSERT INTO pad (id, body) VALUES (?, ?)"

        async def in_a_transaction(i: int) -> None:
            async with db.transaction() as tx:
                await tx.execute(insert, (i, b"x"))

        ways = {"write": lambda i: db.write(insert, (i, b"x")), "record": lambda i: db.record(insert, (i, b"x")),
                "transaction": in_a_transaction}
        i = 0
        for way, commit in ways.items():
            await _settled(db)
            for _ in range(sqlite.CHECKPOINT_EVERY - db._wal.commits - 1):
                i += 1
                await db.write(insert, (i, b"x"))
            assert db._wal.task is None, way
            i += 1
            await commit(i)  # the commit that makes it due
            task = db._wal.task
            assert task is not None and not task.done(), way  # started, and not waited for
        await _settled(db)
        assert await db.fetchval("SELECT COUNT(*) FROM pad") == i


async def test_a_wal_grown_by_one_big_transaction_is_cut_back_when_it_starts_over(tmp_path: Path) -> None:
    """A bulk write leaves a WAL past the size limit; the commits after it make the checkpoints due,
    and the WAL, started over, is cut back to the limit (``journal_size_limit``)."""
    path = tmp_path / "wal.db"
    rnd = random.Random(2)
    async with Database(path) as db:
        await db.write("CREATE TABLE pad (id INTEGER PRIMARY KEY, body BLOB NOT NULL)")
        async with db.transaction() as tx:  # some 70 MB in one commit: more than any limit lets stay
            await tx.executemany("INSERT INTO pad (id, body) VALUES (?, ?)",
                                 [(i, rnd.randbytes(BODY)) for i in range(17_000)])
        grown = _wal(path)
        assert grown > LIMIT
        for _ in range(20):  # steady small writes after it: every way a commit comes
            for _ in range(10):
                await db.write(UPDATE, (rnd.randbytes(BODY), rnd.randrange(ROWS)))
                await db.record(UPDATE, (rnd.randbytes(BODY), rnd.randrange(ROWS)))
                async with db.transaction() as tx:
                    await tx.execute(UPDATE, (rnd.randbytes(BODY), rnd.randrange(ROWS)))
            await _settled(db)
        assert _wal(path) <= sqlite.WAL_LIMIT < grown, (grown, _wal(path))
        assert await db.fetchval("PRAGMA user_version") == 0  # the restart's own frame changed nothing
        assert await db.fetchval("SELECT COUNT(*) FROM pad") == 17_000


async def test_closing_while_a_checkpoint_runs_waits_for_it_and_loses_nothing(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The store closed with a long checkpoint in its thread: the checkpoint is stopped and waited
    for (never left running on a closed connection), and every row is there on the next open."""
    path = tmp_path / "wal.db"
    rnd = random.Random(3)
    db = await Database(path).open()
    await db.write("CREATE TABLE pad (id INTEGER PRIMARY KEY, body BLOB NOT NULL)")
    async with db.transaction() as tx:  # some 70 MB for the first passive checkpoint to copy
        await tx.executemany("INSERT INTO pad (id, body) VALUES (?, ?)",
                             [(i, rnd.randbytes(BODY)) for i in range(17_000)])
    assert isinstance(db, sqlite.SqliteDatabase) and db._wal is not None
    while db._wal.task is None:  # the commits that make a pass due
        await db.write(UPDATE, (rnd.randbytes(BODY), rnd.randrange(ROWS)))
    task = db._wal.task
    for _ in range(20):  # the pass starts, and hands its checkpoint to a thread
        await anyio.lowlevel.checkpoint()
    await db.close()
    assert task.done() and not task.cancelled()
    async with Database(path) as again:
        assert await again.fetchval("SELECT COUNT(*) FROM pad") == 17_000
        assert await again.fetchval("PRAGMA integrity_check") == "ok"
    assert not [r for r in caplog.records if "checkpointed" in r.getMessage()]  # stopped, not failed
