"""The database handle: aiosqlite, WAL, one writer.

Reads run straight on the connection. Every write goes through ``write()`` or ``transaction()``,
which hold one lock per process and open ``BEGIN IMMEDIATE`` so that writers in other processes
on the same data folder queue on SQLite's own lock (``busy_timeout``) instead of failing.
A write returns only after its commit: what is acknowledged is on disk.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiosqlite
import anyio

from benchwarmers_mcp.store.migrations import apply_migrations

Params = Sequence[Any] | dict[str, Any]


class Database:
    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._conn: aiosqlite.Connection | None = None
        self._lock = anyio.Lock()

    async def open(self) -> Database:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = await aiosqlite.connect(self.path, isolation_level=None, timeout=30)
        conn.row_factory = sqlite3.Row
        await conn.execute("PRAGMA journal_mode=WAL")
        await conn.execute("PRAGMA synchronous=NORMAL")
        await conn.execute("PRAGMA busy_timeout=30000")
        await conn.execute("PRAGMA foreign_keys=ON")
        self._conn = conn
        async with self.transaction() as tx:
            await apply_migrations(tx)
        return self

    async def close(self) -> None:
        if self._conn is not None:
            await self._conn.close()
            self._conn = None

    async def __aenter__(self) -> Database:
        return await self.open()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def conn(self) -> aiosqlite.Connection:
        if self._conn is None:
            raise RuntimeError("database is not open")
        return self._conn

    # Each statement is one hop to aiosqlite's thread (~0.1-0.2 ms): ``execute_fetchall`` does
    # execute + fetch in one, where a cursor would cost three (execute, fetch, close).
    async def fetchall(self, sql: str, params: Params = ()) -> list[sqlite3.Row]:
        return list(await self.conn.execute_fetchall(sql, params))

    async def fetchone(self, sql: str, params: Params = ()) -> sqlite3.Row | None:
        rows = await self.conn.execute_fetchall(sql, params)
        return rows[0] if rows else None

    async def fetchval(self, sql: str, params: Params = ()) -> Any:
        row = await self.fetchone(sql, params)
        return None if row is None else row[0]

    async def write(self, sql: str, params: Params = ()) -> int:
        """One write statement, atomic on its own (autocommit); returns the row count.

        It still takes the writer's lock, so it never lands inside another task's open transaction.
        """
        async with self._lock:
            before = self.conn.total_changes
            await self.conn.execute_fetchall(sql, params)
            return self.conn.total_changes - before

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Transaction]:
        async with self._lock:
            await self.conn.execute_fetchall("BEGIN IMMEDIATE")
            try:
                yield Transaction(self.conn)
            except BaseException:
                with anyio.CancelScope(shield=True):
                    await self.conn.execute_fetchall("ROLLBACK")
                raise
            else:
                with anyio.CancelScope(shield=True):
                    await self.conn.execute_fetchall("COMMIT")


class Transaction:
    """The writer's view inside ``Database.transaction()``."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self.conn = conn

    async def execute(self, sql: str, params: Params = ()) -> int:
        before = self.conn.total_changes
        await self.conn.execute_fetchall(sql, params)
        return self.conn.total_changes - before

    async def insert(self, sql: str, params: Params = ()) -> int | None:
        async with self.conn.execute(sql, params) as cur:
            return cur.lastrowid

    async def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        await self.conn.executemany(sql, rows)

    # Each statement is one hop to aiosqlite's thread (~0.1-0.2 ms): ``execute_fetchall`` does
    # execute + fetch in one, where a cursor would cost three (execute, fetch, close).
    async def fetchall(self, sql: str, params: Params = ()) -> list[sqlite3.Row]:
        return list(await self.conn.execute_fetchall(sql, params))

    async def fetchone(self, sql: str, params: Params = ()) -> sqlite3.Row | None:
        rows = await self.conn.execute_fetchall(sql, params)
        return rows[0] if rows else None
