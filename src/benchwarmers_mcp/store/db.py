"""The store's one interface (``Database``, ``Transaction``, ``Row``, ``Reader``) and its SQLite
backend: aiosqlite, WAL, one writer.

Every store module talks to the database through these methods and nothing else; none of them
sees the driver. What a second backend must implement, and the SQLite-only points it must cover,
is in the package docstring (``store/__init__.py``).

Reads run straight on the connection. Every write goes through ``write()`` or ``transaction()``,
which hold one lock per process and open ``BEGIN IMMEDIATE`` so that writers in other processes
on the same data folder queue on SQLite's own lock (``busy_timeout``) instead of failing.
A write returns only after its commit: what is acknowledged is on disk.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence, Sized
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Protocol

import aiosqlite
import anyio

from benchwarmers_mcp.store.migrations import apply_migrations

Params = Sequence[Any]


class Row(Protocol):
    """A result row: by position (``row[0]``) or column name (``row["alias"]``), iterable over its
    values, and ``dict(row)`` gives ``{column: value}``. ``sqlite3.Row`` is one."""

    def __getitem__(self, key: int | str, /) -> Any: ...

    def __iter__(self) -> Iterator[Any]: ...

    def __len__(self) -> int: ...

    def keys(self) -> list[str]: ...


class Reader(Protocol):
    """What both ``Database`` and an open ``Transaction`` answer: a read function that takes a
    ``Reader`` runs inside a writer's transaction or on its own."""

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]: ...

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None: ...

    async def fetchval(self, sql: str, params: Params = ()) -> Any: ...


def placeholders(values: Sized) -> str:
    """``?, ?, ?`` for an ``IN (...)`` list of ``values`` (never empty: callers return early)."""
    return ", ".join("?" * len(values))


# Each statement is one hop to aiosqlite's thread (~0.1-0.2 ms): ``execute_fetchall`` does
# execute + fetch in one, where a cursor would cost three (execute, fetch, close).

async def _fetchall(conn: aiosqlite.Connection, sql: str, params: Params) -> list[Row]:
    return list(await conn.execute_fetchall(sql, params))


async def _fetchone(conn: aiosqlite.Connection, sql: str, params: Params) -> Row | None:
    rows = list(await conn.execute_fetchall(sql, params))
    return rows[0] if rows else None


async def _execute(conn: aiosqlite.Connection, sql: str, params: Params) -> int:
    """Run one statement; the rows it changed itself (the cursor's count: never the ``events`` rows
    its triggers add, which ``total_changes`` would count too, doubling an UPDATE of alerts)."""
    async with conn.execute(sql, params) as cur:
        return max(0, cur.rowcount)


class Database:
    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._conn: aiosqlite.Connection | None = None
        self._lock = anyio.Lock()

    async def open(self) -> Database:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = await aiosqlite.connect(self.path, isolation_level=None, timeout=30)
        try:
            conn.row_factory = sqlite3.Row
            await conn.execute("PRAGMA journal_mode=WAL")
            await conn.execute("PRAGMA synchronous=NORMAL")
            await conn.execute("PRAGMA busy_timeout=30000")
            await conn.execute("PRAGMA foreign_keys=ON")
            self._conn = conn
            async with self.transaction() as tx:
                await apply_migrations(tx)
        except BaseException:  # not a database, or a disk that refuses: the driver's thread must not outlive it
            self._conn = None
            with anyio.CancelScope(shield=True):
                await conn.close()
            raise
        return self

    async def close(self) -> None:
        if self._conn is not None:
            await self._conn.close()
            self._conn = None

    async def __aenter__(self) -> Database:
        return await self.open()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _connection(self) -> aiosqlite.Connection:
        if self._conn is None:
            raise RuntimeError("database is not open")
        return self._conn

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        return await _fetchall(self._connection(), sql, params)

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        return await _fetchone(self._connection(), sql, params)

    async def fetchval(self, sql: str, params: Params = ()) -> Any:
        row = await self.fetchone(sql, params)
        return None if row is None else row[0]

    async def write(self, sql: str, params: Params = ()) -> int:
        """One write statement, atomic on its own (autocommit); returns the rows it changed.

        It still takes the writer's lock, so it never lands inside another task's open transaction.
        """
        async with self._lock:
            return await _execute(self._connection(), sql, params)

    @property
    def backend(self) -> str:
        """The backend's name and version, for people to read (the dashboard's Info page)."""
        return f"SQLite {sqlite3.sqlite_version}"

    def reader(self) -> ReadOnly:
        """A read-only connection of its own to this store (enter it to open it): it never queues
        behind this process's writer and never sees a transaction before its commit. The live feed
        tails the ``events`` table with one."""
        return ReadOnly(self.path)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Transaction]:
        """The one writer: everything inside commits together, or (on any exception) not at all.
        Writers of every process on the store run one at a time."""
        async with self._lock:
            conn = self._connection()
            await conn.execute_fetchall("BEGIN IMMEDIATE")
            try:
                yield Transaction(conn)
            except BaseException:
                with anyio.CancelScope(shield=True):
                    await conn.execute_fetchall("ROLLBACK")
                raise
            else:
                with anyio.CancelScope(shield=True):
                    await conn.execute_fetchall("COMMIT")


class Transaction:
    """The writer's view inside ``Database.transaction()``."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn

    async def execute(self, sql: str, params: Params = ()) -> int:
        """One statement; returns the rows it changed."""
        return await _execute(self._conn, sql, params)

    async def insert(self, sql: str, params: Params = ()) -> int:
        """One ``INSERT`` into a table with an integer ``id`` key; returns the new row's id."""
        async with self._conn.execute(sql, params) as cur:
            if cur.lastrowid is None:
                raise RuntimeError("the insert made no row")
            return cur.lastrowid

    async def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        await self._conn.executemany(sql, rows)

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        return await _fetchall(self._conn, sql, params)

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        return await _fetchone(self._conn, sql, params)

    async def fetchval(self, sql: str, params: Params = ()) -> Any:
        row = await self.fetchone(sql, params)
        return None if row is None else row[0]


class StoreUnavailable(Exception):
    """A read on a ``ReadOnly`` failed for the file's sake (locked, closing, gone): try again later."""


class ReadOnly:
    """A second, read-only connection to a store (``Database.reader()``)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn: aiosqlite.Connection | None = None

    async def open(self) -> ReadOnly:
        conn = await aiosqlite.connect(self.path.resolve().as_uri() + "?mode=ro", uri=True, isolation_level=None)
        await conn.execute("PRAGMA busy_timeout=5000")
        conn.row_factory = sqlite3.Row
        self._conn = conn
        return self

    async def close(self) -> None:
        if self._conn is not None:
            await self._conn.close()
            self._conn = None

    async def __aenter__(self) -> ReadOnly:
        return await self.open()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        if self._conn is None:
            raise StoreUnavailable("the read-only connection is not open")
        try:
            return await _fetchall(self._conn, sql, params)
        except (sqlite3.Error, ValueError) as e:  # ValueError: a connection closed under the read
            raise StoreUnavailable(f"the store could not be read: {e}") from e

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None

    async def fetchval(self, sql: str, params: Params = ()) -> Any:
        row = await self.fetchone(sql, params)
        return None if row is None else row[0]
