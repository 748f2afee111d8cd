"""Which store a test's data folder uses, and opening it.

A test runs on SQLite in its data folder unless it is parametrized by backend (the ``backends``
marker, see ``tests/conftest.py``): then its ``home`` is bound to a fresh PostgreSQL database for
the ``postgresql`` run. Kits and tests open a data folder's store through ``store_of(home)`` (or
``Database(settings.store_target)``), never by building the SQLite path themselves, so the same
test body runs on both backends; ``server_env`` passes the binding to server processes.
``Statements(db)`` counts what a store sends outside a transaction (a kept read costs one).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import anyio

from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import Database

T = TypeVar("T")

_BOUND: dict[str, str] = {}


def _key(home: Path) -> str:
    return str(Path(home).resolve())


def bind(home: Path, url: str | None) -> None:
    """From now on, ``home``'s store is the database at ``url`` (None: SQLite in the folder)."""
    if url is None:
        _BOUND.pop(_key(home), None)
    else:
        _BOUND[_key(home)] = url


def url_for(home: Path) -> str | None:
    """The PostgreSQL URL ``home`` is bound to, or None (SQLite in the folder)."""
    return _BOUND.get(_key(home))


def target(home: Path) -> Path | str:
    return url_for(home) or Path(home) / "benchwarmers.db"


def store_of(home: Path) -> Database:
    """The store of ``home`` (not opened: ``async with store_of(home) as db``)."""
    return Database(target(home))


def in_store(where: Path | Settings, fn: Callable[[Database], Awaitable[T]]) -> T:
    """``fn`` on the store of a data folder (or of a server's settings) through a connection of its
    own, as another process would, in a thread of its own: it runs beside an event loop already
    running in this one (Playwright's sync API keeps one)."""
    async def go() -> T:
        async with Database(where.store_target if isinstance(where, Settings) else target(where)) as db:
            return await fn(db)

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(anyio.run, go).result()


class Statements:
    """Counts the statements a store sends outside a transaction (each top-level read or write)."""

    def __init__(self, db: Database) -> None:
        self.sql: list[str] = []
        self._depth = 0
        for name in ("fetchall", "fetchone", "fetchval", "write"):
            setattr(db, name, self._counted(getattr(db, name)))

    def _counted(self, fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        async def run(sql: str, params: Any = ()) -> Any:
            if self._depth == 0:  # fetchval answers through fetchone: one statement, counted once
                self.sql.append(sql)
            self._depth += 1
            try:
                return await fn(sql, params)
            finally:
                self._depth -= 1
        return run

    async def cost(self, read: Awaitable[Any]) -> tuple[int, Any]:
        before = len(self.sql)
        value = await read
        return len(self.sql) - before, value
