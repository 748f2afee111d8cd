"""Configuration that changes rarely, kept by each process until any process changes it.

A route turn read the models, the endpoints, its collection, the learning settings and its
endpoint's limits afresh each time (issue 13). Now each of those reads costs one statement: the
store's *configuration stamp*, often with the live columns the read needs beside it
(``models.list_all`` reads every model's ``last_used`` with it, ``limits.gate`` the rests, pauses
and quota windows). While the stamp is the one the kept value was read under, the kept value is
the answer; otherwise the table is read again.

The ``config_version`` table (migration ``config_001_version``, ``migrations_bench.py``) holds one
row: ``n``, how many changes were committed (for people), and ``stamp``, a value no change ever
repeats (SQLite's ``random()``, a PostgreSQL sequence). Triggers write both in the statement that
changes a row of ``models``, ``endpoints``, ``collections``, ``collection_members``, ``settings`` or
``user_limits``, so the bump commits, or rolls back, with the change, whichever process made it.
What every call writes does not bump it: a model's ``last_used`` (each seat and route call moves
it: the models trigger watches the other columns only, ``WATCHED``), and a row written again with
the same values (learned facts recomputed, a learned limit learned again).

The rules a kept value follows:

- The stamp is read before the data, so a change committed between the two leaves a kept value
  under the old stamp, which the next read finds superseded.
- Reads through a ``Transaction`` (a ``Reader`` that is not a ``Database``) go to the table and
  keep nothing. A read through ``Database`` from the task that holds the transaction runs inside
  it and may see that transaction's uncommitted change; its stamp is then that change's own, which
  a rollback takes away for good (never reused: not a counter a later commit could bring back),
  so what was kept under it is never matched again. That is why the stamp is not ``n``.
- No row (a store emptied by hand): nothing is kept; the next change writes the row again.
- What is handed out is the caller's: records with no mutable field (``Collection``,
  ``GatewaySettings``, ``LearningSettings``), or fresh copies (a model's ``options``, an
  endpoint's ``headers``), so no caller can change what the next one reads.
- Per process and per ``Database`` (``Database.memo``), never a record: the store stays the truth.

``shared(db)`` lets the reads of one request share one stamp read (``with shared(ctx.db): ...``
around them): the request reads its configuration as of its first read, and the reads that need
no live column cost no statement at all.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from benchwarmers_mcp.store.db import Database, Reader
from benchwarmers_mcp.store.migrations_bench import CONFIG_001_WATCHED as WATCHED

T = TypeVar("T")

MEMO = "config_version"  # the key in ``Database.memo``
MAX_KEPT = 1024  # values kept under one stamp (keys such as a gate's endpoint and alias are open-ended)
STAMP_SQL = "SELECT stamp FROM config_version WHERE id = 1"

# the watched tables' columns written per call (or on every write), which no trigger watches
PER_CALL = {"models": ("last_used",), "user_limits": ("updated_at",)}


class _Missing:
    pass


MISSING: Any = _Missing()


@dataclass
class _Kept:
    stamp: int
    values: dict[Hashable, Any] = field(default_factory=dict)


@dataclass
class _Shared:
    db: Database
    stamp: Any = MISSING  # int | None once read
    open: bool = True


_shared: contextvars.ContextVar[_Shared | None] = contextvars.ContextVar("benchwarmers_config_shared", default=None)


class shared:  # noqa: N801 (used as a function: ``with shared(db): ...``)
    """The kept reads inside share one stamp, read by the first of them: one request's reads of its
    configuration as one snapshot (a route turn reads its collection, the endpoints and the learning
    settings with no statement of their own then). A change another process commits meanwhile is
    seen by the next request, as if this one had read everything at its first read; so the code
    inside must not change configuration itself and then read it back. Tasks started inside read
    their own stamps once it is over. (A class, not ``@contextmanager``: every ask opens one.)"""

    __slots__ = ("holder", "token")

    def __init__(self, db: Database) -> None:
        self.holder = _Shared(db)

    def __enter__(self) -> None:
        self.token = _shared.set(self.holder)

    def __exit__(self, *exc: object) -> None:
        self.holder.open = False
        _shared.reset(self.token)


async def _stamp_now(db: Database) -> int | None:
    holder = _shared.get()
    if holder is None or not holder.open or holder.db is not db:
        return await stamp(db)
    if holder.stamp is MISSING:
        holder.stamp = await stamp(db)
    return holder.stamp  # type: ignore[no-any-return]


async def stamp(db: Reader) -> int | None:
    """The configuration's stamp now (None: no row, so nothing may be kept)."""
    value = await db.fetchval(STAMP_SQL)
    return None if value is None else int(value)


async def count(db: Reader) -> int:
    """How many configuration changes were committed (0 before the first)."""
    value = await db.fetchval("SELECT n FROM config_version WHERE id = 1")
    return 0 if value is None else int(value)


def held(db: Database, at: int | None, key: Hashable) -> Any:
    """What is kept for ``key`` under the stamp ``at`` (read just now), or ``MISSING``."""
    kept = db.memo.get(MEMO)
    if at is None or not isinstance(kept, _Kept) or kept.stamp != at:
        return MISSING
    return kept.values.get(key, MISSING)


def peek(db: Database, key: Hashable) -> tuple[int, Any] | None:
    """What is kept for ``key`` and the stamp it was read under, without reading the store (a read
    that reads the stamp with its live columns, ``limits.gate``, needs the kept value first)."""
    kept = db.memo.get(MEMO)
    if not isinstance(kept, _Kept) or key not in kept.values:
        return None
    return kept.stamp, kept.values[key]


def keep(db: Database, at: int | None, key: Hashable, value: Any) -> None:
    """Keep ``value`` for ``key``: it was read after the stamp ``at`` was. Values kept under another
    stamp are dropped (none is mixed with values read under a stamp it was not read after)."""
    if at is None:
        return
    kept = db.memo.get(MEMO)
    if not isinstance(kept, _Kept) or kept.stamp != at or len(kept.values) >= MAX_KEPT:
        kept = db.memo[MEMO] = _Kept(at)
    kept.values[key] = value


async def cached(db: Reader, key: Hashable, load: Callable[[Reader], Awaitable[T]]) -> T:
    """``load(db)``'s answer, kept while the configuration is unchanged: one statement (the stamp)
    when it is kept. ``load`` must return a value no caller can change (see the module docstring).
    Through a transaction it is always ``load(db)``."""
    if not isinstance(db, Database):
        return await load(db)
    at = await _stamp_now(db)
    found = held(db, at, key)
    if found is not MISSING:
        return found  # type: ignore[no-any-return]
    value = await load(db)
    keep(db, at, key, value)
    return value


async def unwatched(db: Database) -> dict[str, list[str]]:
    """Columns of the watched tables that a change of bumps nothing and that are not written per
    call (``PER_CALL``): a migration that adds a column to a watched table must watch it too. Reads a
    row of each table; a table with no row answers nothing."""
    out: dict[str, list[str]] = {}
    for table, columns in WATCHED.items():
        row = await db.fetchone(f"SELECT * FROM {table} LIMIT 1")
        if row is None or columns is None:
            continue
        missing = [c for c in row.keys() if c not in columns and c not in PER_CALL.get(table, ())]
        if missing:
            out[table] = missing
    return out
