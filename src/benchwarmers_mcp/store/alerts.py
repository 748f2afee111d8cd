"""Alerts ("action needed"): one open row per kind and subject, raised, refreshed and cleared by
the jobs that see the condition, dismissed by the user (a dismissed alert stays open, so the next
run does not raise it again, but it is no longer shown).

Kinds: ``retiring`` (a model retires in N days unless it answers), ``retired`` (retired
automatically), ``connection_held`` (every model on a connection is down: nothing retired),
``registration`` (an endpoint no longer lists a registered model), ``went_paid`` (a free model the
catalog now prices), and the pacing alerts ``auth``, ``billing`` and ``model_gone``.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from benchwarmers_mcp.store.db import Database, Row, Transaction
from benchwarmers_mcp.store.portable import read_text

KINDS = ("retiring", "retired", "connection_held", "registration", "went_paid", "auth", "billing", "model_gone")


@dataclass(frozen=True)
class Alert:
    id: int
    at: float
    kind: str
    subject: str
    message: str
    detail: dict[str, Any] = field(default_factory=dict)
    refreshed_at: float | None = None
    dismissed_at: float | None = None
    cleared_at: float | None = None
    cleared_why: str | None = None


def _alert(row: Row, dialect: str) -> Alert:
    return Alert(row["id"], row["at"], row["kind"], row["subject"], read_text(row["message"], dialect),
                 json.loads(row["detail"] or "{}"), row["refreshed_at"], row["dismissed_at"], row["cleared_at"],
                 read_text(row["cleared_why"], dialect))


async def put(tx: Transaction, kind: str, subject: str, message: str, detail: dict[str, Any] | None = None,
              now: float | None = None) -> int:
    """Raise an alert, or refresh the open one of this kind and subject (its message and detail);
    a dismissed one stays dismissed. Returns its id."""
    now = time.time() if now is None else now
    text, extra = message[:1000], json.dumps(detail or {}, default=str)
    row = await tx.fetchone("SELECT id FROM alerts WHERE kind = ? AND subject = ? AND cleared_at IS NULL",
                            (kind, subject))
    if row is not None:
        await tx.execute("UPDATE alerts SET message = ?, detail = ?, refreshed_at = ? WHERE id = ?",
                         (text, extra, now, row["id"]))
        return int(row["id"])
    return await tx.insert("INSERT INTO alerts (at, kind, subject, message, detail) VALUES (?, ?, ?, ?, ?)",
                           (now, kind, subject, text, extra))


async def clear(tx: Transaction, kinds: tuple[str, ...] | str, subject: str, why: str,
                now: float | None = None) -> int:
    """Clear the open alerts of these kinds about ``subject``; returns how many."""
    chosen = (kinds,) if isinstance(kinds, str) else kinds
    marks = ", ".join("?" for _ in chosen)
    return await tx.execute(
        f"UPDATE alerts SET cleared_at = ?, cleared_why = ? WHERE subject = ? AND kind IN ({marks})"
        " AND cleared_at IS NULL", (time.time() if now is None else now, why[:300], subject, *chosen))


async def raise_one(db: Database, kind: str, subject: str, message: str, detail: dict[str, Any] | None = None,
                    now: float | None = None) -> int:
    async with db.transaction() as tx:
        return await put(tx, kind, subject, message, detail, now)


async def clear_one(db: Database, kinds: tuple[str, ...] | str, subject: str, why: str,
                    now: float | None = None) -> int:
    async with db.transaction() as tx:
        return await clear(tx, kinds, subject, why, now)


async def model_answered(db: Database, alias: str, connection: str, now: float) -> None:
    """A model answered: clear its retiring and gone alerts, a hold on its connection, and the
    pending retirement a 404 had marked."""
    async with db.transaction() as tx:
        await clear(tx, ("retiring", "model_gone"), alias, "it answered", now)
        await clear(tx, "connection_held", connection, f"{alias} answered", now)
        await tx.execute("UPDATE model_states SET pending_retire_at = NULL, pending_why = NULL WHERE alias = ?",
                         (alias,))


async def open_alerts(db: Database, *, dismissed: bool = False) -> list[Alert]:
    """Open alerts, oldest first; ``dismissed`` includes those the user dismissed."""
    where = "cleared_at IS NULL" + ("" if dismissed else " AND dismissed_at IS NULL")
    return [_alert(r, db.dialect) for r in await db.fetchall(f"SELECT * FROM alerts WHERE {where} ORDER BY at, id")]


async def find(db: Database, alert_id: int) -> Alert | None:
    row = await db.fetchone("SELECT * FROM alerts WHERE id = ?", (alert_id,))
    return None if row is None else _alert(row, db.dialect)


async def open_of(db: Database, kind: str, subject: str) -> Alert | None:
    row = await db.fetchone("SELECT * FROM alerts WHERE kind = ? AND subject = ? AND cleared_at IS NULL",
                            (kind, subject))
    return None if row is None else _alert(row, db.dialect)


async def dismiss(db: Database, alert_id: int, now: float | None = None) -> bool:
    changed = await db.write("UPDATE alerts SET dismissed_at = ? WHERE id = ? AND cleared_at IS NULL"
                             " AND dismissed_at IS NULL", (time.time() if now is None else now, alert_id))
    return changed > 0


async def raise_went_paid(db: Database, alias: str, *, price_in: float | None = None, price_out: float | None = None,
                          source: str = "catalog", now: float | None = None) -> int:
    """A free model the catalog now prices (dollars per million tokens in and out). For the catalog's
    refresh to call; refreshed (not repeated) while the alert is open."""
    prices = " / ".join(f"${p:g}" for p in (price_in, price_out) if p is not None)
    message = (f"{alias} was free and is now priced" + (f" at {prices} per million tokens" if prices else "")
               + f" ({source}); calls to it may now cost money")
    return await raise_one(db, "went_paid", alias, message,
                           {"price_in": price_in, "price_out": price_out, "source": source}, now)


async def clear_went_paid(db: Database, alias: str, why: str = "free again", now: float | None = None) -> int:
    return await clear_one(db, "went_paid", alias, why, now)
