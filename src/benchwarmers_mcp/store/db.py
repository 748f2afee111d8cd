"""The store's one interface: ``Database``, ``Transaction``, ``Row``, ``Reader``.

Every store module talks to the database through these methods and nothing else; none of them
sees the driver. Two backends implement them: ``store/sqlite.py`` (aiosqlite, one file in the data
folder, WAL, one writer: the default) and ``store/postgres.py`` (asyncpg, a shared PostgreSQL that
several replicas use at once). ``Database(target)`` picks one from its target: a
``postgresql://`` URL opens PostgreSQL, a path a SQLite file; anything else is refused
(``target_problem``: another scheme, libpq's keyword/value form, a URL that reads two ways).

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


# the forms a store's target may take that are not a path, and a password in any of them
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")  # a scheme (one letter is a Windows drive: a path)
_KEYWORDS = re.compile(r"(?:^|\s)[A-Za-z_]+\s*=")  # libpq's keyword/value form: host=db password=...
_QUERY_PASSWORD = re.compile(r"(?i)(password=)[^&#]*")  # a query parameter (sslpassword= too)
_WORD_PASSWORD = re.compile(r"(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'?|\S*)")  # keyword/value, quoted or not
URL_FORM = "postgresql://user:password@host:port/db"


def mask_url(url: str) -> str:
    """The store's target with any password shown as ``***``, whatever its form: a URL's user part
    (read up to its last ``@``, so a password whose ``@``, ``/``, ``?`` or ``#`` is not
    percent-encoded is masked whole too), a ``password=`` query parameter, libpq's keyword/value
    ``password=...`` (quoted or not). What a log line, an error, ``bench status``, ``/api/status``
    and the Info page may show."""
    scheme = _URL.match(url)
    if scheme is None or len(scheme.group()) < 3:  # no scheme (a drive letter is a path's)
        return _WORD_PASSWORD.sub(r"\1***", url)
    head = scheme.group() + ("//" if url[scheme.end():].startswith("//") else "")
    user, at, host = url[len(head):].rpartition("@")
    rest = user.split(":", 1)[0] + ":***@" + host if at and ":" in user else url[len(head):]
    return head + _QUERY_PASSWORD.sub(r"\1***", rest)


def passwords_of(target: Path | str) -> set[str]:
    """The password a store's URL holds, as written and decoded (none: empty): what a driver's
    error may repeat, for the caller to mask."""
    if not is_postgres_url(target):
        return set()
    try:
        written = urlsplit(str(target)).password or ""
    except ValueError:
        return set()
    return {written, unquote(written)} - {""}


def target_problem(target: Path | str) -> str | None:
    """Why ``target`` names no store, or None: it must be a ``postgresql://`` URL that reads one way
    only (asyncpg and ``urllib`` split it alike) or the path of a SQLite file. Never quotes it (the
    caller shows it through ``mask_url``)."""
    if not isinstance(target, str):
        return None
    if any(ord(c) < 32 or ord(c) == 127 for c in target):
        return "it holds a control character (a line break?)"
    if is_postgres_url(target):
        _, sep, rest = target.partition("://")
        if not sep:
            return f"a PostgreSQL URL starts {target.split(':', 1)[0]}://"
        authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
        if authority.count("@") > 1 or "@" in rest[len(authority):]:
            return ("its user name or password holds an '@', '/', '?' or '#' that is not percent-encoded "
                    "(write them %40, %2F, %3F, %23), so it does not read one way only")
        try:
            parts = urlsplit(target)
        except ValueError:
            return "it does not read as a URL (a '[' or ']' not percent-encoded, as %5B and %5D?)"
        try:
            _ = parts.port
        except ValueError:
            return "its port is not a number from 0 to 65535"
        return None
    if _URL.match(target) and len(target.split(":", 1)[0]) > 1:
        return f"it is not a PostgreSQL URL ({URL_FORM}), the only kind of database URL there is"
    if _KEYWORDS.search(target):
        return f"libpq's keyword/value form (host=... password=...) is not read: write it as a URL, {URL_FORM}"
    return None


def describe_target(target: Path | str) -> dict[str, Any]:
    """Which store a target names, with nothing secret in it: ``{"backend": "sqlite", "path": ...}``
    or ``{"backend": "postgresql", "host": ..., "port": ..., "database": ..., "user": ..., "url": masked}``
    (only the masked URL when it does not read one way only; ``"unknown"`` and the target masked when
    it is neither: ``target_problem``)."""
    refused = target_problem(target) is not None
    if not is_postgres_url(target):
        return {"backend": "unknown", "url": mask_url(str(target))} if refused else \
            {"backend": "sqlite", "path": str(target)}
    url = str(target)
    if refused:
        return {"backend": "postgresql", "url": mask_url(url)}
    parts = urlsplit(url)
    return {"backend": "postgresql", "host": parts.hostname or "localhost", "port": parts.port or 5432,
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
    """The backend a target names (``target_problem`` refuses what is neither a URL nor a path)."""
    problem = target_problem(target)
    if problem:
        raise StoreUnavailable(f"cannot use {mask_url(str(target))!r} as the store: {problem} (or leave "
                               "BENCHWARMERS_DATABASE_URL unset for SQLite in the data folder)")
    if is_postgres_url(target):
        from benchwarmers_mcp.store.postgres import PostgresDatabase
        return PostgresDatabase
    from benchwarmers_mcp.store.sqlite import SqliteDatabase
    return SqliteDatabase
