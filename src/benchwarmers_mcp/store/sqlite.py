"""The SQLite backend: one file in the data folder, WAL, one writer per process, statements run on
the event loop unless they would block it.

Every write goes through ``write()`` or ``transaction()``, which hold one lock per process and open
``BEGIN IMMEDIATE`` so that writers in other processes on the same data folder queue on SQLite's own
lock instead of failing. A write returns only after its commit: what is acknowledged is on disk.

Where statements run. A hop to a driver thread per statement (aiosqlite's way) costs ~70 us of CPU
and ~150 us of wall time with the GIL handed back and forth, against ~5 us for the statement
itself: a route turn's 18 statements cost more than the rest of the turn. So statements run on the
event loop's thread, on two connections (a writer, and a reader), and move to a thread only when
they would block it:

- a read that takes more than ``INLINE_BUDGET`` of CPU (the thread's, so a busy machine that
  preempts the loop does not count) is interrupted (SQLite's progress handler; only that statement
  stops, a transaction stays open) and runs again in a thread (on aiosqlite's connection for reads
  outside a transaction); its SQL goes there directly for the next ``SLOW_FOR`` seconds;
- a statement SQLite answers ``SQLITE_BUSY`` (another process holds the write lock) runs again in a
  thread, waiting on ``busy_timeout`` as before: a busy statement changed nothing; that wait is
  shielded (the connection is the thread's until it is done);
- ``executemany`` (bulk) runs in a thread, and so do the WAL's checkpoints (below).

A read on ``Database`` from the task that holds the open transaction runs on the writer, inside it
(it sees that transaction's rows, as on PostgreSQL); any other task's read sees only commits: on
the writer when it is idle (its page cache survives its own commits; the reader's is dropped after
each), else on the reader (in WAL a reader never waits for a writer).

Checkpoints (points where other tasks run: ``asyncio.sleep(0)``). A read, a ``write()`` and a
``transaction()`` each start with one, before the lock, so code that counted on a store call
letting a woken task run first keeps working, and a cancellation there has changed nothing. Once
the lock is taken nothing awaits: a write, BEGIN, COMMIT and ROLLBACK run at once, and statements
inside a transaction run one after another, with a checkpoint only once ``YIELD_EVERY`` seconds
have passed since the last. A record (``record()``: a usage row, a seat, a turn) has no checkpoint:
with the writer free it runs with no await at all, so no cancellation can cut it short.
A transaction held across trips round the event loop made every other write queue behind it:
at 20 concurrent route turns a turn cost 28% more CPU for it (benchmarks/versions.py).

The WAL. SQLite's automatic checkpoint is off on the writer (it would run, and fsync, inside the
commit that crosses its threshold, on the loop). Instead every commit counts (a ``write()``, a
``record()``, a transaction), and every ``CHECKPOINT_EVERY``th starts a pass of ``_Checkpointer``
in a task of its own that no writer awaits: passive checkpoints in a thread copy the WAL into the
database while the writes go on. They never let the WAL start over while writes go on (SQLite
reuses it only when a writer begins with every frame copied and no reader in it), so once it holds
``RESTART_AT`` bytes a restart checkpoint copies what the passes left, holding SQLite's writer
lock: the one wait a checkpoint adds to a write, a short one (a small copy and its syncs) once
every ``RESTART_AT`` bytes written. It does not take this process's lock: awaited under that lock,
the thread's answer waited for a busy event loop, and the copy grew by every write made meanwhile.
``journal_size_limit`` cuts a restarted WAL file back to ``WAL_LIMIT``. The WAL's size under
steady panels over time, and the writers' waits: ``benchmarks/wal.py`` (benchmarks/README.md).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import sqlite3
import time
from collections.abc import Callable, Iterable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import aiosqlite
import anyio
import anyio.to_thread

from benchwarmers_mcp.store import integrity
from benchwarmers_mcp.store.db import Database, Params, ReadOnly, Row, StoreUnavailable, Transaction
from benchwarmers_mcp.store.folder import private_file
from benchwarmers_mcp.store.migrations import apply_migrations

T = TypeVar("T")

log = logging.getLogger("benchwarmers.store")

INLINE_BUDGET = 0.002  # CPU seconds a read may hold the event loop before it moves to a thread
SLOW_FOR = 60.0  # seconds a read found slow goes straight to the thread
BUSY_TIMEOUT_MS = 30000  # how long a writer waits for another process's write lock (in a thread)
CHECKPOINT_EVERY = 200  # commits (writes, records, transactions) between two passes of the checkpointer
RESTART_AT = 16 * 2**20  # bytes of WAL past which a pass also restarts the WAL (under the writer's lock)
WAL_LIMIT = 2 * RESTART_AT  # journal_size_limit: a restarted WAL file longer than this is cut back to it
RESTART_WAIT_MS = 100  # how long a restart waits for another process's writer or a reader before it gives up
SETTLE_PASSES = 4  # passive passes at most before a restart, while each still halves what is left to copy
RESTART_COPIES = 256  # frames (about 1 MB) a restart may be left to copy: more, and a passive pass goes first
YIELD_EVERY = 0.001  # seconds a transaction's statements may run before one lets other tasks in
_SLOW_KEEP = 256  # SQL texts remembered as slow (a bounded set)


class _Slow(Exception):
    """A read ran over its budget (or SQLite was busy): run it again in a thread."""


# The store failing, not the statement: a full disk (SQLITE_FULL; ``PRAGMA max_page_count`` in the
# tests), an I/O error, a file that cannot be opened or written (a read-only mount, a file moved
# away). Each is a 503 (``StoreUnavailable``), kept for /health. Primary codes: the extended ones
# (SQLITE_IOERR_WRITE ...) carry theirs in the low byte.
_UNAVAILABLE = frozenset({sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY})


def _store_failed(e: sqlite3.Error) -> bool:
    code = getattr(e, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in _UNAVAILABLE


@functools.lru_cache(maxsize=1024)  # a statement's few texts, asked on every run of each
def _is_read(sql: str) -> bool:
    head = sql.lstrip()[:6].upper()
    return head == "SELECT" or head.startswith("WITH")


class _Inline:
    """One sqlite3 connection used on the event loop's thread (and, for what would block, in a
    worker thread while the loop's task awaits it; never both at once)."""

    def __init__(self, conn: sqlite3.Connection, slow: dict[str, float], path: Path) -> None:
        self.conn = conn
        self.slow = slow
        self.path = path  # named by a damaged file's message
        self._deadline = 0.0
        self.failure: str | None = None  # the last failure of the store itself, for /health
        self.errors = 0  # and how many there were (``Database.error_count``)
        conn.set_progress_handler(self._over_budget, 2000)

    def _over_budget(self) -> int:
        """SQLite's progress handler (every 2,000 steps): non-zero interrupts the statement."""
        if not self._deadline:
            return 0
        if self._deadline < 0:  # armed: the read's first check starts its clock
            self._deadline = time.thread_time() + INLINE_BUDGET
            return 0
        return 1 if time.thread_time() > self._deadline else 0

    def run(self, sql: str, fn: Callable[[], T]) -> T:
        """``fn`` inline; a read over budget or a busy database raises ``_Slow`` (nothing changed)."""
        read = _is_read(sql)
        if read and self.slow.get(sql, 0.0) > time.monotonic():
            raise _Slow
        self._deadline = -1.0 if read else 0.0
        try:
            return fn()
        except sqlite3.OperationalError as e:
            code = getattr(e, "sqlite_errorcode", None)
            if code == sqlite3.SQLITE_INTERRUPT and read:
                if len(self.slow) >= _SLOW_KEEP:
                    self.slow.clear()
                self.slow[sql] = time.monotonic() + SLOW_FOR
                raise _Slow from e
            if code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
                raise _Slow from e
            self.reraise(sql, e)
        except sqlite3.DatabaseError as e:
            self.reraise(sql, e)
        finally:
            self._deadline = 0.0

    def reraise(self, sql: str, e: sqlite3.DatabaseError) -> NoReturn:
        """Raise ``mapped(sql, e)``: the store's own error, from ``e``, or ``e`` as it was."""
        failure = self.mapped(sql, e)
        if failure is e:
            raise e
        raise failure from e

    def mapped(self, sql: str, e: sqlite3.DatabaseError) -> Exception:
        """What a failure of SQLite's under ``sql`` is to the rest of the server: the store's own
        error when the store itself failed (a full disk, I/O: ``StoreUnavailable``; a damaged page:
        ``StoreDamaged``), counted and kept for /health; else ``e`` itself, the caller's to see."""
        if isinstance(e, sqlite3.OperationalError):
            return self._unavailable(sql, e) if _store_failed(e) else e
        return self._damaged(e) if integrity.is_damage(e) else e

    def _unavailable(self, sql: str, e: sqlite3.Error) -> StoreUnavailable:
        """The store failed under ``sql``: a COMMIT the disk refused leaves its transaction open,
        so it is rolled back here (the writer is free for the next one); the failure is kept."""
        if sql == "COMMIT" and self.conn.in_transaction:
            try:
                self.conn.execute("ROLLBACK").close()
            except sqlite3.Error:
                pass  # the transaction ends with the connection, if not now
        doing = "read" if _is_read(sql) else "write to"
        error = StoreUnavailable(f"cannot {doing} the SQLite store: {e}")
        self.failure = error.message
        self.errors += 1
        return error

    def _damaged(self, e: sqlite3.DatabaseError) -> integrity.StoreDamaged:
        """A page that cannot be read (damaged after the check at open): the open's sentence (the
        file, restore or ``benchwarmers doctor``), a 503 like any store failure, kept for /health."""
        error = integrity.StoreDamaged(self.path, str(e), header=e.sqlite_errorcode == sqlite3.SQLITE_NOTADB)
        self.failure = error.message
        self.errors += 1
        return error

    async def in_thread(self, fn: Callable[[], T], sql: str = "") -> T:
        """``fn`` in a worker thread, waiting on SQLite's busy timeout, with no read budget."""
        def call() -> T:
            self.conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            try:
                return fn()
            finally:
                self.conn.execute("PRAGMA busy_timeout=0")

        try:
            return await anyio.to_thread.run_sync(call)
        except sqlite3.DatabaseError as e:
            self.reraise(sql, e)

    async def now(self, sql: str, fn: Callable[[], T]) -> T:
        """``fn`` inline with no checkpoint first, so nothing can cancel it: it runs whole, or (when
        it would block) in a thread that a cancellation waits for."""
        try:
            return self.run(sql, fn)
        except _Slow:
            pass
        with anyio.CancelScope(shield=True):
            result = await self.in_thread(fn, sql)
        return result


def _rows(conn: sqlite3.Connection, sql: str, params: Params) -> Callable[[], list[Row]]:
    return lambda: conn.execute(sql, params).fetchall()


def _changes(conn: sqlite3.Connection, sql: str, params: Params) -> Callable[[], int]:
    """Run one statement; the rows it changed itself (the cursor's count: never the ``events`` rows
    its triggers add, which ``total_changes`` would count too, doubling an UPDATE of alerts)."""
    def run() -> int:
        cur = conn.execute(sql, params)
        cur.close()
        return max(0, cur.rowcount)

    return run


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, timeout=0, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    return conn


class _Checkpointer:
    """The WAL's checkpoints: a pass every ``CHECKPOINT_EVERY`` commits, in a task of its own that no
    writer awaits, run whole in a thread on a connection of its own.

    A pass runs a passive checkpoint (no lock, no wait: it copies what it can while writes go on).
    Once the WAL holds ``restart_at`` bytes, more passive passes copy what came in meanwhile, until
    one finds at most ``RESTART_COPIES`` frames or no longer halves them, and then a restart
    checkpoint copies what came in during the last and readies the WAL to start over
    (``_restart``). The restart holds SQLite's writer lock, and nothing else: this process's
    writers wait for it on their busy timeout, in a thread, as they do for another process's
    writer; each of its own waits for a writer or a reader lasts ``RESTART_WAIT_MS`` at most. It
    runs straight after the last passive pass, in the same thread: neither waits for the event
    loop, so a busy loop lengthens neither the copy the writers wait for nor the WAL. Several
    processes on one data folder each run their own passes; a checkpoint that finds another's under
    way leaves it be. A reader that holds an old snapshot (a backup) keeps the copy from advancing
    and any restart from finishing: then, and after a restart that timed out, the next one waits
    for ``RESTART_AT`` more bytes, so the writers do not wait on restarts bound to fail.
    """

    def __init__(self, conn: sqlite3.Connection, page_size: int) -> None:
        self.conn = conn
        self.frame = page_size + 24  # a WAL frame: a page and its header
        self.commits = 0
        self.task: asyncio.Task[None] | None = None
        self.restart_at = RESTART_AT  # bytes of WAL that make a pass restart it
        self.closing = False
        try:
            for pragma in (f"busy_timeout={RESTART_WAIT_MS}",  # a restart's waits; a passive pass has none
                           "wal_autocheckpoint=0", f"journal_size_limit={WAL_LIMIT}"):
                conn.execute(f"PRAGMA {pragma}")
        except BaseException:
            conn.close()
            raise

    def committed(self) -> None:
        """One more commit; every ``CHECKPOINT_EVERY``th starts a pass, unless one is under way."""
        self.commits += 1
        if self.commits >= CHECKPOINT_EVERY and self.task is None and not self.closing:
            self.commits = 0
            self.task = asyncio.get_running_loop().create_task(self._pass())

    async def _pass(self) -> None:
        try:
            await anyio.to_thread.run_sync(self._copy_then_restart)
        except (sqlite3.Error, OSError) as e:  # a full disk, a file gone: the next pass tries again
            if not self.closing:  # else ``close()`` interrupted it
                log.warning("the SQLite WAL could not be checkpointed: %s", e)
        finally:
            self.task = None

    def _checkpoint(self, mode: str) -> tuple[int, int, int]:
        """(1 if it was blocked, frames in the WAL, frames copied into the database). Another
        connection's checkpoint under way blocks it at once: (1, -1, -1); so does ``close()``."""
        if self.closing:
            return 1, -1, -1
        row = self.conn.execute(f"PRAGMA wal_checkpoint({mode})").fetchall()[0]
        return int(row[0]), int(row[1]), int(row[2])

    def _copy_then_restart(self) -> None:
        """A pass, in a thread: passive checkpoints, then a restart once the WAL is long enough."""
        copied_before = found_before = -1
        passes = 0
        while passes < SETTLE_PASSES:
            passes += 1
            _, frames, copied = self._checkpoint("PASSIVE")
            if frames < 0 or frames * self.frame < self.restart_at:  # another's checkpoint, or small yet
                return
            if frames > copied and copied == copied_before:  # a reader's snapshot holds the copy back
                self.restart_at = frames * self.frame + RESTART_AT
                return
            if copied_before >= 0:  # what this pass found: written while the one before copied
                found = frames - copied_before
                if found <= RESTART_COPIES or 0 <= found_before < 2 * found:  # small, or no longer halving
                    break
                found_before = found
            copied_before = copied
        began = time.perf_counter()
        blocked, frames, copied = self._restart()
        held = time.perf_counter() - began
        if not blocked:
            self.restart_at = RESTART_AT
        elif frames >= 0:  # it waited RESTART_WAIT_MS for a writer or a reader: not again soon
            self.restart_at = frames * self.frame + RESTART_AT
        log.debug("WAL restart %s after %d passive passes: %d frames, %d of them left to copy, the writer"
                  " held %.1f ms", "blocked" if blocked else "done", passes, frames, frames - copied_before,
                  held * 1000)

    def _restart(self) -> tuple[int, int, int]:
        """A restart checkpoint and, when it got the WAL ready to start over, the new WAL's first
        frame, written here by a write that changes nothing (``user_version``, unused, set to
        itself): the frame that starts a WAL over syncs the WAL's header (``synchronous=NORMAL``
        does on every restart) and cuts the file back to ``journal_size_limit``, which would
        otherwise fall to the next commit, on the event loop. A writer of this process can still
        come first (this thread takes the GIL back in between): then that commit pays for both."""
        result = self._checkpoint("RESTART")
        if result[0]:
            return result
        conn = self.conn
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as e:
            if getattr(e, "sqlite_errorcode", None) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
                return result  # a writer came first: its commit starts the WAL over
            raise
        try:
            version = int(conn.execute("PRAGMA user_version").fetchall()[0][0])
            conn.execute(f"PRAGMA user_version={version}")
            conn.execute("COMMIT")
        finally:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
        return result

    async def settle(self) -> None:
        """Wait for the pass under way, if any, to end (``close()``; a test counting the WAL's bytes)."""
        if self.task is not None:
            await asyncio.wait([self.task])

    async def close(self) -> None:
        """No more passes; the checkpoint under way is interrupted (SQLite leaves the WAL as it was:
        what it copied is copied again next time) and waited for, never left running on a closed
        connection; then the connection is closed."""
        self.closing = True
        if self.task is not None:
            self.conn.interrupt()  # safe from any thread; a no-op between statements
            with anyio.CancelScope(shield=True):
                await self.settle()
        self.conn.close()


class SqliteDatabase(Database):
    dialect = "sqlite"

    def __init__(self, target: Path | str, **options: Any) -> None:
        super().__init__(Path(target))
        self.path = Path(target)
        self._writer: _Inline | None = None
        self._reader: _Inline | None = None
        self._threaded: aiosqlite.Connection | None = None  # reads too slow for the loop
        # asyncio's lock: taken at once when free, where anyio's always goes round the event loop
        # twice (the app and the tests run on asyncio only)
        self._lock = asyncio.Lock()
        self._holder: asyncio.Task[Any] | None = None  # the task whose transaction is open
        self._slow: dict[str, float] = {}  # SQL found too slow for the loop, until when
        self._wal: _Checkpointer | None = None  # once open: every commit counts towards its next pass

    async def open(self) -> SqliteDatabase:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            writer = _Inline(_connect(self.path), self._slow, self.path)
        except (OSError, sqlite3.Error) as e:
            raise StoreUnavailable(f"cannot open the SQLite store {self.path}: {e}") from e
        self._writer = writer
        try:
            # a damaged file is refused here, before anything reads it (store/integrity.py)
            await writer.in_thread(lambda: integrity.check_at_open(writer.conn, self.path))
            for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "foreign_keys=ON",
                           "wal_autocheckpoint=0", f"journal_size_limit={WAL_LIMIT}"):
                await writer.now("PRAGMA", _rows(writer.conn, f"PRAGMA {pragma}", ()))
            async with self.transaction() as tx:
                await apply_migrations(tx)
            self._reader = _Inline(_connect(self.path), self._slow, self.path)
            self._reader.conn.execute("PRAGMA foreign_keys=ON")
            page_size = int(writer.conn.execute("PRAGMA page_size").fetchall()[0][0])
            self._wal = _Checkpointer(_connect(self.path), page_size)
            for made in (self.path, self.path.with_name(self.path.name + "-wal"),
                         self.path.with_name(self.path.name + "-shm")):
                private_file(made)  # 0600: the owner's alone (SQLite gives -wal/-shm the file's mode)
        except BaseException:  # not a database, or a disk that refuses: close what was opened
            with anyio.CancelScope(shield=True):
                await self.close()
            raise
        return self

    async def close(self) -> None:
        if self._wal is not None:
            await self._wal.close()
            self._wal = None
        if self._threaded is not None:
            await self._threaded.close()
            self._threaded = None
        for side in (self._reader, self._writer):
            if side is not None:
                side.conn.close()
        self._reader = self._writer = None

    def _side(self, side: _Inline | None) -> _Inline:
        if side is None:
            raise RuntimeError("database is not open")
        return side

    async def _threaded_reader(self) -> aiosqlite.Connection:
        if self._threaded is None:
            conn = await aiosqlite.connect(self.path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
            conn.row_factory = sqlite3.Row
            if self._threaded is None:
                self._threaded = conn
            else:  # another task opened one meanwhile
                await conn.close()
        return self._threaded

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        if self._holder is not None and self._holder is asyncio.current_task():
            # this task's own transaction: read inside it, as the transaction's own statements are
            writer = self._side(self._writer)
            return await writer.now(sql, _rows(writer.conn, sql, params))
        await asyncio.sleep(0)
        # Decided after the checkpoint, and run at once: the writer when it is idle (no transaction
        # open, no statement in a thread), since its page cache is still good after its own commits,
        # where the reader's is dropped after every commit it did not make; else the reader.
        side = self._writer if self._holder is None and not self._lock.locked() else self._reader
        side = self._side(side)
        try:
            return side.run(sql, _rows(side.conn, sql, params))
        except _Slow:
            pass
        try:
            return list(await (await self._threaded_reader()).execute_fetchall(sql, params))
        except sqlite3.DatabaseError as e:
            side.reraise(sql, e)

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None

    async def write(self, sql: str, params: Params = ()) -> int:
        """One write statement, atomic on its own; returns the rows it changed.

        It still takes the writer's lock, so it never lands inside another task's open transaction.
        Its checkpoint comes first (a cancellation there writes nothing); then the statement runs
        whole, with no await while the lock is held unless it must wait in a thread.
        """
        await asyncio.sleep(0)
        async with self._lock:
            writer = self._side(self._writer)
            changed = await writer.now(sql, _changes(writer.conn, sql, params))
        self._committed()
        return changed

    async def record(self, sql: str, params: Params = ()) -> int:
        """A record that commits whole whatever happens to its task (``Database.record``). With the
        writer free it is written now: taking a free ``asyncio.Lock`` does not suspend, nor does a
        statement run inline (one that must go to a thread is shielded there), so nothing on the way
        is a point where a cancellation could reach it, and it needs no shield and no checkpoint.
        Otherwise it waits its turn under a shield."""
        if self._lock.locked():
            with anyio.CancelScope(shield=True):
                return await self.write(sql, params)
        try:
            await self._lock.acquire()  # free: taken at once
        except asyncio.CancelledError:  # a woken writer was first after all, and the wait was cancelled
            with anyio.CancelScope(shield=True):
                await self.write(sql, params)
            raise
        try:
            writer = self._side(self._writer)
            changed = await writer.now(sql, _changes(writer.conn, sql, params))
        finally:
            self._lock.release()
        self._committed()
        return changed

    def _committed(self) -> None:
        """A commit of this process's writer: each counts towards the WAL's next checkpoint."""
        if self._wal is not None:
            self._wal.committed()

    def failure(self) -> str | None:
        """The last failure kept by a connection's error boundary (``_Inline._unavailable``)."""
        kept = (s.failure for s in (self._writer, self._reader) if s is not None and s.failure)
        return super().failure() or next(kept, None)

    def error_count(self) -> int:
        return super().error_count() + sum(s.errors for s in (self._writer, self._reader) if s is not None)

    def recovered(self) -> None:
        super().recovered()
        for side in (self._writer, self._reader):
            if side is not None:
                side.failure = None

    @property
    def backend(self) -> str:
        return f"SQLite {sqlite3.sqlite_version}"

    def reader(self) -> SqliteReadOnly:
        return SqliteReadOnly(self.path)

    def transaction(self) -> AbstractAsyncContextManager[Transaction]:
        return _Begun(self)


class _Begun:
    """``SqliteDatabase.transaction()``: BEGIN IMMEDIATE under the writer's lock after a checkpoint,
    COMMIT on a clean exit, ROLLBACK on any exception (cancellation included), the lock released
    either way; a commit counts towards the WAL's next checkpoint (which it does not wait for). A class,
    not ``@asynccontextmanager``: every route turn's claim and every pacer's admission opens one,
    and a generator-based manager costs an async generator, its finaliser hook and two frames."""

    __slots__ = ("db", "writer")

    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db
        self.writer: _Inline | None = None

    async def __aenter__(self) -> Transaction:
        db = self.db
        await asyncio.sleep(0)  # BEGIN's checkpoint, before the lock (as ``write``)
        await db._lock.acquire()
        try:
            writer = db._side(db._writer)
            conn = writer.conn
            await writer.now("BEGIN", lambda: conn.execute("BEGIN IMMEDIATE").close())
        except BaseException:
            db._lock.release()
            raise
        db._holder = asyncio.current_task()
        self.writer = writer
        return SqliteTransaction(writer)

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: object) -> None:
        db, writer = self.db, self.writer
        assert writer is not None
        conn = writer.conn
        try:
            try:
                if error is not None:
                    if conn.in_transaction:  # at once: nothing cancels it (a thread's wait is shielded)
                        await writer.now("ROLLBACK", lambda: conn.execute("ROLLBACK").close())
                    return
                await writer.now("COMMIT", lambda: conn.execute("COMMIT").close())
            finally:
                db._holder = None
        finally:
            db._lock.release()
        db._committed()


class SqliteTransaction(Transaction):
    """Statements inside an open transaction run at once, one after another, with a checkpoint
    only once ``YIELD_EVERY`` has passed since the last: a short transaction (a route turn's claim)
    holds the writer's lock for no trip round the event loop, so no other write queues behind it,
    and a long one still lets other tasks run."""

    dialect = "sqlite"

    def __init__(self, writer: _Inline) -> None:
        self._writer = writer
        self._conn = writer.conn
        self._since = time.perf_counter()

    async def _run(self, sql: str, fn: Callable[[], T]) -> T:
        if time.perf_counter() - self._since > YIELD_EVERY:
            await asyncio.sleep(0)
            self._since = time.perf_counter()
        return await self._writer.now(sql, fn)

    async def execute(self, sql: str, params: Params = ()) -> int:
        return await self._run(sql, _changes(self._conn, sql, params))

    async def insert(self, sql: str, params: Params = ()) -> int:
        def run() -> int:
            cur = self._conn.execute(sql, params)
            cur.close()
            if cur.lastrowid is None:
                raise RuntimeError("the insert made no row")
            return cur.lastrowid

        return await self._run(sql, run)

    async def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        """Many rows (bulk work: in a thread, which a cancellation waits for: the connection is the
        thread's until it is done)."""
        with anyio.CancelScope(shield=True):
            await self._writer.in_thread(lambda: self._conn.executemany(sql, rows).close())

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        return await self._run(sql, _rows(self._conn, sql, params))

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None


class SqliteReadOnly(ReadOnly):
    """The file opened again with ``mode=ro``: WAL lets it read beside the writer."""

    dialect = "sqlite"

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn: aiosqlite.Connection | None = None

    async def open(self) -> SqliteReadOnly:
        try:
            conn = await aiosqlite.connect(self.path.resolve().as_uri() + "?mode=ro", uri=True,
                                           isolation_level=None)
        except (OSError, sqlite3.Error) as e:
            raise StoreUnavailable(f"cannot open the SQLite store {self.path} to read: {e}") from e
        await conn.execute("PRAGMA busy_timeout=5000")
        conn.row_factory = sqlite3.Row
        self._conn = conn
        return self

    async def close(self) -> None:
        if self._conn is not None:
            await self._conn.close()
            self._conn = None

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        if self._conn is None:
            raise StoreUnavailable("the read-only connection is not open")
        try:
            return list(await self._conn.execute_fetchall(sql, params))
        except (sqlite3.Error, ValueError) as e:  # ValueError: a connection closed under the read
            if isinstance(e, sqlite3.DatabaseError) and integrity.is_damage(e):
                raise integrity.StoreDamaged(self.path, str(e)) from e
            raise StoreUnavailable(f"the store could not be read: {e}") from e
