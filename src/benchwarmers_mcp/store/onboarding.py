"""The onboarding queue (migration ``health_004``): one row per model to bring on, in order, with
its state, the step it is at and a log line per step. It is the queue: a restart loses nothing,
and a row left ``running`` by a stopped process resumes from its step."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from benchwarmers_mcp.store.db import Database, Row

STATES = ("queued", "running", "done", "no answer", "failed", "skipped")
FINISHED = ("done", "no answer", "failed", "skipped")
MAX_QUEUED = 50


@dataclass(frozen=True)
class Item:
    id: int
    batch: str
    served: str
    endpoint: str
    mode: str  # full, quick, quick-adhoc
    state: str
    step: int = 0
    alias: str | None = None  # the one asked for, until step 2 settles it
    role: str | None = None  # None: chosen at registration (image generators get ``image``)
    log: list[dict[str, Any]] = field(default_factory=list)
    reason: str = ""
    stop: bool = False
    created: float = 0.0
    started: float | None = None
    finished: float | None = None


def _item(row: Row) -> Item:
    return Item(row["id"], row["batch"], row["served"], row["endpoint"], row["mode"], row["state"], row["step"],
                row["alias"], row["role"], json.loads(row["log"] or "[]"), row["reason"], bool(row["stop"]),
                row["created"], row["started"], row["finished"])


@dataclass(frozen=True)
class Wanted:
    """One model to queue: where, how, and optionally its alias and role."""

    served: str
    endpoint: str
    mode: str = "full"
    alias: str | None = None
    role: str | None = None


async def enqueue(db: Database, batch: str, items: list[Wanted], now: float) -> list[int]:
    """Queue items in one transaction; refused whole past ``MAX_QUEUED``."""
    async with db.transaction() as tx:
        waiting = await tx.fetchval("SELECT COUNT(*) FROM onboarding WHERE state IN ('queued', 'running')")
        if int(waiting or 0) + len(items) > MAX_QUEUED:
            raise OverflowError(f"the queue holds at most {MAX_QUEUED} models waiting")
        ids = []
        for w in items:
            ids.append(await tx.insert(
                "INSERT INTO onboarding (batch, served, endpoint, mode, alias, role, state, created)"
                " VALUES (?, ?, ?, ?, ?, ?, 'queued', ?)", (batch, w.served, w.endpoint, w.mode, w.alias, w.role, now)))
        return ids


async def waiting(db: Database) -> list[Item]:
    """Queued and running items, running first, then in the order they came."""
    rows = await db.fetchall("SELECT * FROM onboarding WHERE state IN ('queued', 'running')"
                             " ORDER BY CASE WHEN state = 'running' THEN 0 ELSE 1 END, id")
    return [_item(r) for r in rows]


async def items(db: Database, *, cleared: bool = False, limit: int = 200) -> list[Item]:
    where = "" if cleared else "WHERE cleared = 0"
    rows = await db.fetchall(f"SELECT * FROM onboarding {where} ORDER BY id DESC LIMIT ?", (limit,))
    return [_item(r) for r in reversed(rows)]


async def get(db: Database, item_id: int) -> Item | None:
    row = await db.fetchone("SELECT * FROM onboarding WHERE id = ?", (item_id,))
    return None if row is None else _item(row)


async def start(db: Database, item_id: int, now: float) -> None:
    await db.write("UPDATE onboarding SET state = 'running', started = COALESCE(started, ?) WHERE id = ?",
                   (now, item_id))


async def step(db: Database, item_id: int, number: int, entry: dict[str, Any], *, alias: str | None = None) -> None:
    """Record a step: its log line, the step reached, and the alias once it is known."""
    async with db.transaction() as tx:
        raw = await tx.fetchval("SELECT log FROM onboarding WHERE id = ?", (item_id,))
        log = json.loads(raw) if raw else []
        log.append(entry)
        await tx.execute("UPDATE onboarding SET log = ?, step = ?, alias = COALESCE(?, alias) WHERE id = ?",
                         (json.dumps(log), number, alias, item_id))


async def end(db: Database, item_id: int, state: str, reason: str, now: float) -> None:
    await db.write("UPDATE onboarding SET state = ?, reason = ?, finished = ? WHERE id = ?",
                   (state, reason[:500], now, item_id))


async def stop(db: Database, now: float) -> dict[str, int]:
    """Skip everything queued; ask the running item to stop after its step."""
    async with db.transaction() as tx:
        skipped = await tx.execute("UPDATE onboarding SET state = 'skipped', reason = 'stopped', finished = ?"
                                   " WHERE state = 'queued'", (now,))
        running = await tx.execute("UPDATE onboarding SET stop = 1 WHERE state = 'running'")
    return {"skipped": skipped, "stopping": running}


async def stop_asked(db: Database, item_id: int) -> bool:
    return bool(await db.fetchval("SELECT stop FROM onboarding WHERE id = ?", (item_id,)))


async def clear(db: Database) -> int:
    """Hide finished items from the queue's view (their rows stay on the record)."""
    marks = ", ".join("?" for _ in FINISHED)
    return await db.write(f"UPDATE onboarding SET cleared = 1 WHERE cleared = 0 AND state IN ({marks})", FINISHED)
