"""The SQLite backend: one file in the data folder, aiosqlite, WAL, one writer.

Reads run straight on the one connection. Every write goes through ``write()`` or
``transaction()``, which hold one lock per process and open ``BEGIN IMMEDIATE`` so that writers in
other processes on the same data folder queue on SQLite's own lock (``busy_timeout``) instead of
failing. A write returns only after its commit: what is acknowledged is on disk.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiosqlite
import anyio

from benchwarmers_mcp.store.db import Database, Params, ReadOnly, Row, StoreUnavailable, Transaction
from benchwarmers_mcp.store.migrations import apply_migrations

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


class SqliteDatabase(Database):
    dialect = "sqlite"

    def __init__(self, target: Path | str, **options: Any) -> None:
        super().__init__(Path(target))
        self.path = Path(target)
        self._conn: aiosqlite.Connection | None = None
        self._lock = anyio.Lock()

    async def open(self) -> SqliteDatabase:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = await aiosqlite.connect(self.path, isolation_level=None, timeout=30)
        except (OSError, sqlite3.Error) as e:
            raise StoreUnavailable(f"cannot open the SQLite store {self.path}: {e}") from e
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

    def _connection(self) -> aiosqlite.Connection:
        if self._conn is None:
            raise RuntimeError("database is not open")
        return self._conn

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        return await _fetchall(self._connection(), sql, params)

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        return await _fetchone(self._connection(), sql, params)

    async def write(self, sql: str, params: Params = ()) -> int:
        """One write statement, atomic on its own (autocommit); returns the rows it changed.

        It still takes the writer's lock, so it never lands inside another task's open transaction
        (one connection per process: a read here while a transaction is open sees its rows).
        """
        async with self._lock:
            return await _execute(self._connection(), sql, params)

    @property
    def backend(self) -> str:
        return f"SQLite {sqlite3.sqlite_version}"

    def reader(self) -> SqliteReadOnly:
        return SqliteReadOnly(self.path)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Transaction]:
        async with self._lock:
            conn = self._connection()
            await conn.execute_fetchall("BEGIN IMMEDIATE")
            try:
                yield SqliteTransaction(conn)
            except BaseException:
                with anyio.CancelScope(shield=True):
                    await conn.execute_fetchall("ROLLBACK")
                raise
            else:
                with anyio.CancelScope(shield=True):
                    await conn.execute_fetchall("COMMIT")


class SqliteTransaction(Transaction):
    dialect = "sqlite"

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn

    async def execute(self, sql: str, params: Params = ()) -> int:
        return await _execute(self._conn, sql, params)

    async def insert(self, sql: str, params: Params = ()) -> int:
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


class SqliteReadOnly(ReadOnly):
    """The file opened again with ``mode=ro``: WAL lets it read beside the writer."""

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
            return await _fetchall(self._conn, sql, params)
        except (sqlite3.Error, ValueError) as e:  # ValueError: a connection closed under the read
            raise StoreUnavailable(f"the store could not be read: {e}") from e
