"""The PostgreSQL backend: a shared database that several server processes (replicas) use at once,
on asyncpg with one connection pool per process.

Chosen by ``BENCHWARMERS_DATABASE_URL=postgresql://user:password@host:5432/db``. What differs from
SQLite, all of it here and in the migrations' per-backend DDL:

- Placeholders: the store's ``?`` become ``$1, $2 ...`` (outside quoted text), once per statement
  text (cached); asyncpg prepares and caches each statement per connection.
- One writer at a time, across every replica: ``transaction()`` opens with
  ``BEGIN; SELECT pg_advisory_xact_lock(WRITER_LOCK)`` (one round trip), so writer transactions
  run one after another exactly as SQLite's ``BEGIN IMMEDIATE`` makes them; the lock ends with the
  transaction. Inside a process, writers first queue on a local lock, so at most one pooled
  connection per process waits on the database's lock and the rest stay free for reads.
  ``write()`` (one statement) is such a transaction too: so every writer is serialised as on
  SQLite, and ids are given out in commit order (the live feed tails ``events`` by id: a smaller
  id committed after a larger one was read would be missed).
- ``reader()``: a connection of its own, outside the pool, read-only
  (``default_transaction_read_only``), each read autocommitted: it sees every commit.
- Rows changed: the command status (``UPDATE 3``); triggers' rows are not counted (callers only
  test for zero or add counts up). New ids: ``INSERT ... RETURNING id``.
- Types: ``numeric`` (what ``SUM`` of a BIGINT column gives) comes back as an int when whole and a
  float otherwise, as SQLite gives them; text compares byte-wise (``COLLATE "C"``, set by the DDL),
  so ``ORDER BY`` a name sorts as on SQLite.
- A read on ``Database`` from inside the same task's open transaction runs on that transaction's
  connection (it sees its rows, as on SQLite, and never waits on a second pooled connection).
- Text with U+0000: PostgreSQL's ``text`` refuses the byte, so a string parameter holding one (or
  the encoding's mark) goes to the driver as ``portable.stored_text`` (``_bound``, the one place
  parameters are handed over: two C-speed ``in`` per string parameter, nothing more); store
  modules read such text back through ``portable.read_text``.
- Failures of the store itself (refused, dropped, a bad login, an administrator's shutdown, a full
  disk, an I/O error, a read-only standby) become ``StoreUnavailable`` with the URL's password
  masked (the password is never logged or put in a message), and the failure is kept for
  ``/health`` (``Database.failure``) until a write probe finds the store working again.
"""

from __future__ import annotations

import contextvars
import re
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import anyio
import asyncpg

from benchwarmers_mcp.store.db import Database, Params, ReadOnly, Row, StoreUnavailable, Transaction, mask_url
from benchwarmers_mcp.store.migrations import apply_migrations
from benchwarmers_mcp.store.portable import NUL, TEXT_MARK, stored_text

WRITER_LOCK = 0x62656E6368  # "bench": the store's one writer lock (transaction-level, advisory)
BEGIN_SQL = f"BEGIN; SELECT pg_advisory_xact_lock({WRITER_LOCK})"
POOL_MIN, POOL_MAX = 1, 10
CLOSE_GRACE = 10.0  # seconds close() waits for connections in use before it cuts them

# the connection of the transaction the current task holds open: (database, connection, task id).
# A task started inside the transaction inherits the variable but not the connection (its id differs)
_held: contextvars.ContextVar[tuple[PostgresDatabase, asyncpg.Connection, int] | None] = contextvars.ContextVar(
    "benchwarmers_pg_transaction", default=None)

_QUOTED = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|\$\$.*?\$\$", re.S)


@lru_cache(maxsize=4096)
def rewrite(sql: str) -> str:
    """``?`` placeholders as ``$1, $2, ...``; quoted text, identifiers and ``$$`` bodies untouched."""
    if "?" not in sql:
        return sql
    out: list[str] = []
    n = 0
    last = 0

    def number(chunk: str) -> str:
        nonlocal n
        pieces = chunk.split("?")
        joined = pieces[0]
        for piece in pieces[1:]:
            n += 1
            joined += f"${n}{piece}"
        return joined

    for quoted in _QUOTED.finditer(sql):
        out.append(number(sql[last:quoted.start()]))
        out.append(quoted.group(0))
        last = quoted.end()
    out.append(number(sql[last:]))
    return "".join(out)


def _changed(status: str) -> int:
    """Rows changed, from a command status: ``INSERT 0 1``, ``UPDATE 3``, ``DELETE 0``."""
    tail = status.rsplit(" ", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def _numeric(text: str) -> int | float:
    return int(text) if text.lstrip("-").isdigit() else float(text)


async def _setup(conn: asyncpg.Connection) -> None:
    await conn.set_type_codec("numeric", encoder=str, decoder=_numeric, schema="pg_catalog", format="text")


async def _kept(conn: asyncpg.Connection) -> None:
    """A pooled connection's reset on release: nothing beyond the driver's own (an open transaction
    rolled back). The store sets no session state (no ``SET``, ``LISTEN``, cursors or session-level
    advisory locks: the writer's lock is the transaction's), so the default reset query, one more
    round trip per read and one more inside the writer's lock per write, undid nothing
    (``benchmarks/backends.py``: PostgreSQL's CPU per panel 5.3-6.3 ms with it, 4.0-4.6 without)."""


def _bound(params: Params) -> Params:
    """The parameters as the driver takes them: a string holding a NUL (or the encoding's mark) as
    ``stored_text``, everything else as it is (the same sequence when nothing needs it, the common
    case: two C-speed ``in`` per string, ``benchmarks/pg_params.py``)."""
    for value in params:
        if isinstance(value, str) and (NUL in value or TEXT_MARK in value):
            return [stored_text(v) if isinstance(v, str) else v for v in params]
    return params


# The store failing, not the statement: the server unreachable or gone, a refused login, an
# administrator's shutdown or cancel, a full disk or no memory (class 53), an I/O error (58), a
# standby that takes no writes, and a pooled connection the server cut in the middle of an
# operation (the driver's protocol still waits for its end: ``InternalClientError`` "another
# operation is in progress", until it sees the connection closed and the pool replaces it).
# Each is a 503 (``StoreUnavailable``), and kept for /health.
CONNECTION_ERRORS: tuple[type[BaseException], ...] = (
    OSError, asyncpg.PostgresConnectionError, asyncpg.InterfaceError, asyncpg.InternalClientError,
    asyncpg.InvalidAuthorizationSpecificationError, asyncpg.InvalidCatalogNameError,
    asyncpg.CannotConnectNowError, asyncpg.TooManyConnectionsError, asyncpg.AdminShutdownError,
    asyncpg.InsufficientResourcesError, asyncpg.OperatorInterventionError, asyncpg.PostgresSystemError,
    asyncpg.ReadOnlySQLTransactionError,
)


class PostgresDatabase(Database):
    dialect = "postgresql"

    def __init__(self, target: Path | str, *, min_size: int = POOL_MIN, max_size: int = POOL_MAX,
                 **options: Any) -> None:
        super().__init__(str(target))
        self.url = str(target)
        self._sizes = (min_size, max_size)
        self._pool: asyncpg.Pool | None = None
        self._writer = anyio.Lock()
        self._version = ""

    # -- errors: the one boundary where the driver's failures become the store's --

    def _unavailable(self, e: BaseException, doing: str) -> StoreUnavailable:
        reason = str(e) or type(e).__name__
        password = unquote(urlsplit(self.url).password or "")
        if password:
            reason = reason.replace(password, "***")
        error = StoreUnavailable(f"cannot {doing} the PostgreSQL store at {mask_url(self.url)}: {reason}")
        self.failed(error)
        return error

    async def open(self) -> PostgresDatabase:
        try:
            self._pool = await asyncpg.create_pool(
                self.url, min_size=self._sizes[0], max_size=self._sizes[1], init=_setup, reset=_kept,
                server_settings={"application_name": "benchwarmers"})
        except (*CONNECTION_ERRORS, asyncpg.PostgresError, ValueError) as e:
            raise self._unavailable(e, "open") from None  # the driver's message may carry the URL
        try:
            self._version = str(await self._pool.fetchval("SHOW server_version")).split(" ")[0]
            async with self.transaction() as tx:
                await apply_migrations(tx)
        except BaseException:
            await self.close()
            raise
        return self

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is None:
            return
        with anyio.move_on_after(CLOSE_GRACE, shield=True):
            await pool.close()
            return
        pool.terminate()

    def _pool_or_fail(self) -> asyncpg.Pool:
        if self._pool is None:
            raise RuntimeError("database is not open")
        return self._pool

    def _own(self) -> asyncpg.Connection | None:
        held = _held.get()
        if held is None or held[0] is not self or held[2] != anyio.get_current_task().id:
            return None
        return held[1]

    # -- reads and single writes --

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        conn = self._own()
        try:
            if conn is not None:
                return list(await conn.fetch(rewrite(sql), *_bound(params)))
            return list(await self._pool_or_fail().fetch(rewrite(sql), *_bound(params)))
        except CONNECTION_ERRORS as e:
            raise self._unavailable(e, "read") from e

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        conn = self._own()
        try:
            if conn is not None:
                row: Row | None = await conn.fetchrow(rewrite(sql), *_bound(params))
                return row
            row = await self._pool_or_fail().fetchrow(rewrite(sql), *_bound(params))
            return row
        except CONNECTION_ERRORS as e:
            raise self._unavailable(e, "read") from e

    async def write(self, sql: str, params: Params = ()) -> int:
        conn = self._own()
        if conn is not None:  # inside this task's transaction: part of it
            try:
                return _changed(await conn.execute(rewrite(sql), *_bound(params)))
            except CONNECTION_ERRORS as e:
                raise self._unavailable(e, "write to") from e
        async with self.transaction() as tx:
            return await tx.execute(sql, params)

    @property
    def backend(self) -> str:
        return f"PostgreSQL {self._version}" if self._version else "PostgreSQL"

    def reader(self) -> PostgresReadOnly:
        return PostgresReadOnly(self)

    # -- the one writer --

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Transaction]:
        async with self._writer:
            pool = self._pool_or_fail()
            try:
                conn = await pool.acquire()
            except CONNECTION_ERRORS as e:
                raise self._unavailable(e, "write to") from e
            try:
                async with self._open_transaction(conn) as tx:
                    yield tx
            finally:
                with anyio.CancelScope(shield=True):
                    await pool.release(conn)

    @asynccontextmanager
    async def _open_transaction(self, conn: asyncpg.Connection) -> AsyncIterator[Transaction]:
        try:
            await conn.execute(BEGIN_SQL)
        except CONNECTION_ERRORS as e:
            raise self._unavailable(e, "write to") from e
        token = _held.set((self, conn, anyio.get_current_task().id))
        try:
            yield PostgresTransaction(conn, self)
        except BaseException:
            with anyio.CancelScope(shield=True):
                if not conn.is_closed():
                    try:
                        await conn.execute("ROLLBACK")
                    except CONNECTION_ERRORS:
                        pass  # the connection is gone, and its transaction with it
            raise
        else:
            with anyio.CancelScope(shield=True):
                try:
                    await conn.execute("COMMIT")
                except CONNECTION_ERRORS as e:
                    raise self._unavailable(e, "commit to") from e
        finally:
            _held.reset(token)


class PostgresTransaction(Transaction):
    dialect = "postgresql"

    def __init__(self, conn: asyncpg.Connection, db: PostgresDatabase) -> None:
        self._conn = conn
        self._db = db

    async def execute(self, sql: str, params: Params = ()) -> int:
        try:
            return _changed(await self._conn.execute(rewrite(sql), *_bound(params)))
        except CONNECTION_ERRORS as e:
            raise self._db._unavailable(e, "write to") from e

    async def insert(self, sql: str, params: Params = ()) -> int:
        try:
            new = await self._conn.fetchval(rewrite(sql) + " RETURNING id", *_bound(params))
        except CONNECTION_ERRORS as e:
            raise self._db._unavailable(e, "write to") from e
        if new is None:
            raise RuntimeError("the insert made no row")
        return int(new)

    async def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        batch = [tuple(_bound(r)) for r in rows]
        if not batch:
            return
        try:
            await self._conn.executemany(rewrite(sql), batch)
        except CONNECTION_ERRORS as e:
            raise self._db._unavailable(e, "write to") from e

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        try:
            return list(await self._conn.fetch(rewrite(sql), *_bound(params)))
        except CONNECTION_ERRORS as e:
            raise self._db._unavailable(e, "read") from e

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        try:
            row: Row | None = await self._conn.fetchrow(rewrite(sql), *_bound(params))
            return row
        except CONNECTION_ERRORS as e:
            raise self._db._unavailable(e, "read") from e


class PostgresReadOnly(ReadOnly):
    """One connection outside the pool, read-only, each read autocommitted (it sees every commit).
    Reads take turns on it (an asyncpg connection refuses a second operation while one is under
    way: the live feed's poll and a new subscriber's ``head()`` can come at once). A connection
    the server dropped is opened again by the next read (the pool does the same for its own)."""

    dialect = "postgresql"

    def __init__(self, db: PostgresDatabase) -> None:
        self._db = db
        self._conn: asyncpg.Connection | None = None
        self._turn = anyio.Lock()

    async def open(self) -> PostgresReadOnly:
        self._conn = await self._connect()
        return self

    async def _connect(self) -> asyncpg.Connection:
        try:
            conn = await asyncpg.connect(self._db.url, server_settings={
                "application_name": "benchwarmers-reader", "default_transaction_read_only": "on"})
            await _setup(conn)
        except (*CONNECTION_ERRORS, asyncpg.PostgresError, ValueError) as e:
            raise self._db._unavailable(e, "open") from None
        return conn

    async def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with anyio.move_on_after(CLOSE_GRACE, shield=True):
                await conn.close()
                return
            conn.terminate()

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        if self._conn is None:
            raise StoreUnavailable("the read-only connection is not open")
        try:
            async with self._turn:
                if self._conn.is_closed():  # dropped (a server restart, an administrator): connect again
                    self._conn = await self._connect()
                return list(await self._conn.fetch(rewrite(sql), *_bound(params)))
        except CONNECTION_ERRORS as e:
            raise self._db._unavailable(e, "read") from e
