"""The usage ledger: one row per upstream call. Never the prompt.

``t`` is when the call was sent: the moment the pacer let its last attempt go, never when it was
asked for (a call that waited in the pacer is counted in the window it was sent in, and every
attempt of a retried call is counted at its last); ``attempts`` is how many requests went out (0
when the bench refused it before sending, ``t`` then being when it was refused); ``seconds`` is
from its first attempt to its end; ``status`` is ok, empty, error, timeout, refused, cancelled or
interrupted; ``caller`` says who called (gateway, route, probe, suite) and ``purpose`` what for
(panel, route, ...).

An **interrupted** call was in flight when its server died (a crash, ``kill -9``): the row is
booked from the call's in-flight entry (``store/limits.py``: on the next start, or once the entry
expires), so the daily and monthly windows still count it. Its outcome and tokens are unknown:
``tokens_unknown`` is set, ``tokens_in`` is what the pacer counted the call at (its estimate of
what was sent), ``seconds`` is 0 and ``caller`` is ``unknown``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from benchwarmers_mcp.store.db import Database, Transaction


@dataclass(frozen=True)
class UsageRow:
    alias: str
    connection: str
    endpoint: str
    served: str
    status: str
    attempts: int = 1
    tokens_in: int = 0
    tokens_out: int = 0
    reasoning: int = 0
    seconds: float = 0.0
    caller: str = "gateway"
    purpose: str = ""
    key_name: str = "local"
    t: float = field(default_factory=time.time)
    tokens_unknown: bool = False  # an interrupted call's: its tokens_in is the pacer's estimate


INTERRUPTED = "interrupted"  # the status of a call booked after its server died mid-call


INSERT_SQL = ("INSERT INTO usage (t, alias, connection, endpoint, served, status, attempts, tokens_in, tokens_out,"
              " reasoning, seconds, caller, purpose, key_name, tokens_unknown)"
              " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")


def _values(row: UsageRow) -> tuple[Any, ...]:
    return (row.t, row.alias, row.connection, row.endpoint, row.served, row.status, row.attempts, row.tokens_in,
            row.tokens_out, row.reasoning, row.seconds, row.caller, row.purpose, row.key_name, int(row.tokens_unknown))


async def append(db: Database, row: UsageRow) -> None:
    """The call's row, committed whole even if the call's task is cancelled meanwhile."""
    await db.record(INSERT_SQL, _values(row))


async def insert(tx: Transaction, row: UsageRow) -> None:
    """The row inside a caller's transaction (``store.limits.settle`` writes it with what was learned)."""
    await tx.execute(INSERT_SQL, _values(row))


async def insert_many(tx: Transaction, rows: Iterable[UsageRow]) -> None:
    """Many rows in one statement batch, inside a caller's transaction (benchmarks fill a ledger)."""
    await tx.executemany(INSERT_SQL, (_values(r) for r in rows))


async def totals(db: Database, since: float = 0.0) -> dict[str, dict[str, int]]:
    """Per connection since ``since``: calls, attempts, tokens, and ``tokens_unknown``, how many of
    those calls are interrupted ones whose tokens are unknown (their estimate is in ``tokens_in``)."""
    rows = await db.fetchall(
        "SELECT connection, COUNT(*), SUM(attempts), SUM(tokens_in), SUM(tokens_out), SUM(reasoning),"
        " SUM(tokens_unknown) FROM usage WHERE t >= ? GROUP BY connection", (since,))
    return {r[0]: {"calls": r[1], "attempts": r[2] or 0, "tokens_in": r[3] or 0, "tokens_out": r[4] or 0,
                   "reasoning": r[5] or 0, "tokens_unknown": r[6] or 0} for r in rows}


COLUMNS = ("t, alias, connection, endpoint, served, status, attempts, tokens_in, tokens_out, reasoning, seconds,"
           " caller, purpose, key_name, tokens_unknown")  # named as the fields of UsageRow


def _row(r: Any) -> UsageRow:
    return UsageRow(**{**dict(r), "tokens_unknown": bool(r["tokens_unknown"])})


async def rows(db: Database, since: float = 0.0, limit: int = 1000) -> list[UsageRow]:
    """The latest rows (by the time they were sent) since ``since``, newest first."""
    found = await db.fetchall(f"SELECT {COLUMNS} FROM usage WHERE t >= ? ORDER BY t DESC LIMIT ?", (since, limit))
    return [_row(r) for r in found]


async def in_order(db: Database) -> list[UsageRow]:
    """Every row, in the order written."""
    return [_row(r) for r in await db.fetchall(f"SELECT {COLUMNS} FROM usage ORDER BY id")]
