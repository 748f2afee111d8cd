"""The store's one interface: ``Database``, ``Transaction``, ``Row``, ``Reader``.

Every store module talks to the database through these methods and nothing else; none of them
sees the driver. Two backends implement them: ``store/sqlite.py`` (aiosqlite, one file in the data
folder, WAL, one writer: the default) and ``store/postgres.py`` (asyncpg, a shared PostgreSQL that
several replicas use at once). ``Database(target)`` picks one from its target: a
``postgresql://`` URL opens PostgreSQL, anything else is the path of a SQLite file.

What a backend implements, the points where the two differ, and how to add a third are in the
package docstring (``store/__init__.py``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence, Sized
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, ClassVar, Protocol
from urllib.parse import unquote, urlsplit

import anyio

from benchwarmers_mcp.errors import BenchError

Params = Sequence[Any]
POSTGRES_SCHEMES = ("postgresql", "postgres")
# The store's integers are 64-bit (SQLite's INTEGER, PostgreSQL's BIGINT): a larger one from a
# request is refused at the door (``inbound.loads_strict``), never sent to the store.
LARGEST_INTEGER = 2**63 - 1


class Row(Protocol):
    """A result row: by position (``row[0]``) or column name (``row["alias"]``), iterable over its
    values, and ``dict(row)`` gives ``{column: value}``. ``sqlite3.Row`` and ``asyncpg.Record`` are."""

    def __getitem__(self, key: int | str, /) -> Any: ...

    def __iter__(self) -> Iterator[Any]: ...

    def __len__(self) -> int: ...

    def keys(self) -> Any: ...


class Reader(Protocol):
    """What both ``Database`` and an open ``Transaction`` answer: a read function that takes a
    ``Reader`` runs inside a writer's transaction or on its own. ``dialect`` ("sqlite" or
    "postgresql") is for the rare read with no portable SQL (``portable.floor_of``)."""

    dialect: ClassVar[str]

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]: ...

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None: ...

    async def fetchval(self, sql: str, params: Params = ()) -> Any: ...


def placeholders(values: Sized) -> str:
    """``?, ?, ?`` for an ``IN (...)`` list of ``values`` (never empty: callers return early)."""
    return ", ".join("?" * len(values))


def is_postgres_url(target: object) -> bool:
    return isinstance(target, str) and target.split(":", 1)[0].lower() in POSTGRES_SCHEMES


_PASSWORD = re.compile(r"(?i)(password=)[^&\s]*")


def mask_url(url: str) -> str:
    """The URL with its password (in the user part or a ``password=`` query parameter) shown as
    ``***``: what a log line, an error, ``bench status`` and ``/api/status`` may show."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "(an unreadable database URL)"
    netloc = parts.netloc
    if "@" in netloc:
        user, _, host = netloc.rpartition("@")
        if ":" in user:
            user = user.split(":", 1)[0] + ":***"
        netloc = f"{user}@{host}"
    query = _PASSWORD.sub(r"\1***", parts.query)
    return parts._replace(netloc=netloc, query=query).geturl()


def describe_target(target: Path | str) -> dict[str, Any]:
    """Which store a target names, with nothing secret in it: ``{"backend": "sqlite", "path": ...}``
    or ``{"backend": "postgresql", "host": ..., "port": ..., "database": ..., "user": ..., "url": masked}``."""
    if not is_postgres_url(target):
        return {"backend": "sqlite", "path": str(target)}
    url = str(target)
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return {"backend": "postgresql", "url": mask_url(url)}
    return {"backend": "postgresql", "host": parts.hostname or "localhost", "port": port or 5432,
            "database": unquote(parts.path.lstrip("/")) or unquote(parts.username or ""),
            "user": unquote(parts.username or ""), "url": mask_url(url)}


class StoreUnavailable(BenchError):
    """The store cannot be opened, reached or written (a wrong URL, a server down, a refused login, a
    dropped connection, a full disk, an I/O error): a 503 in the client's wire shape. Its message
    names the store with any password masked."""

    status = 503


class Database:
    """The store. ``Database(path)`` is SQLite, ``Database("postgresql://...")`` PostgreSQL; both
    open with ``await db.open()`` (or ``async with``), which applies the migrations.

    Reads: ``fetchall`` / ``fetchone`` / ``fetchval``. Writes: ``write`` (one statement, committed
    on return, returns rows changed) and ``transaction()`` (the one writer: everything inside commits
    together or not at all, and writers of every process and replica on the store run one at a time).
    """

    dialect: ClassVar[str] = ""  # "sqlite" or "postgresql": migrations read it for per-backend DDL

    def __new__(cls, target: Path | str, **options: Any) -> Database:
        if cls is Database:
            cls = _backend(target)
        return super().__new__(cls)

    def __init__(self, target: Path | str, **options: Any) -> None:
        self.target = target
        # what a read function derived and may answer again while what it came from is unchanged
        # (each entry says what that is: ``ratings.evidence``); this process's alone, never a record
        self.memo: dict[str, Any] = {}
        self._failure: str | None = None

    # -- the store's own failures, kept for /health (``store/liveness.py``) --

    def failed(self, error: StoreUnavailable) -> None:
        """The backend's error boundary says the store itself failed (``StoreUnavailable``)."""
        self._failure = error.message

    def failure(self) -> str | None:
        """The last failure of the store itself since a write probe last found it working, or None."""
        return self._failure

    def recovered(self) -> None:
        """A write probe found the store working: the failure kept is forgotten."""
        self._failure = None

    @property
    def where(self) -> dict[str, Any]:
        """Which store this is, password masked (``describe_target``)."""
        return describe_target(self.target)

    async def open(self) -> Database:
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Database:
        return await self.open()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        raise NotImplementedError

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        raise NotImplementedError

    async def fetchval(self, sql: str, params: Params = ()) -> Any:
        row = await self.fetchone(sql, params)
        return None if row is None else row[0]

    async def write(self, sql: str, params: Params = ()) -> int:
        """One write statement, atomic on its own; returns the rows it changed."""
        raise NotImplementedError

    async def record(self, sql: str, params: Params = ()) -> int:
        """``write()`` for a record of what was done (a call's usage row, a seat, a route turn): it
        commits whole even when its task is cancelled meanwhile (the caller hanging up, a timeout),
        so what was done is on the record. Here it waits its turn shielded; a backend that can
        write at once with no await (SQLite, when its writer is free) does that instead, where no
        cancellation can reach it, and a shield would cost more than the write's own Python."""
        with anyio.CancelScope(shield=True):
            changed = await self.write(sql, params)
        return changed

    def transaction(self) -> AbstractAsyncContextManager[Transaction]:
        """The one writer: everything inside commits together, or (on any exception, cancellation
        included) not at all. Writers of every process on the store run one at a time."""
        raise NotImplementedError

    @property
    def backend(self) -> str:
        """The backend's name and version, for people to read (the dashboard's Info page)."""
        raise NotImplementedError

    def reader(self) -> ReadOnly:
        """A read-only connection of its own to this store (enter it to open it): it never queues
        behind this process's writer and never sees a transaction before its commit. The live feed
        tails the ``events`` table with one."""
        raise NotImplementedError


class Transaction:
    """The writer's view inside ``Database.transaction()``."""

    dialect: ClassVar[str] = ""

    async def execute(self, sql: str, params: Params = ()) -> int:
        """One statement; returns the rows it changed."""
        raise NotImplementedError

    async def insert(self, sql: str, params: Params = ()) -> int:
        """One ``INSERT`` into a table with an integer ``id`` key; returns the new row's id."""
        raise NotImplementedError

    async def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        raise NotImplementedError

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        raise NotImplementedError

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        raise NotImplementedError

    async def fetchval(self, sql: str, params: Params = ()) -> Any:
        row = await self.fetchone(sql, params)
        return None if row is None else row[0]


class ReadOnly:
    """A second, read-only connection to a store (``Database.reader()``). A read that fails for the
    store's sake (a locked or closing file, a dropped server) raises ``StoreUnavailable``: try again."""

    dialect: ClassVar[str] = ""

    async def open(self) -> ReadOnly:
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> ReadOnly:
        return await self.open()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        raise NotImplementedError

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None

    async def fetchval(self, sql: str, params: Params = ()) -> Any:
        row = await self.fetchone(sql, params)
        return None if row is None else row[0]


def _backend(target: Path | str) -> type[Database]:
    if is_postgres_url(target):
        from benchwarmers_mcp.store.postgres import PostgresDatabase
        return PostgresDatabase
    if isinstance(target, str) and "://" in target:
        raise StoreUnavailable(f"unknown database URL {mask_url(target)!r}: use postgresql://user:password@host/db"
                               " (or leave BENCHWARMERS_DATABASE_URL unset for SQLite in the data folder)")
    from benchwarmers_mcp.store.sqlite import SqliteDatabase
    return SqliteDatabase
