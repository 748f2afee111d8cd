"""Kept and forgotten on purpose: prompts and answers are kept so they can be judged later, for the
retention the user sets (``retention`` in ``settings``, ``{"days": n}``; ``DEFAULT_DAYS`` when
unset), then pruned.

``prune`` sets to '' the texts older than that, with a ``pruned_at`` mark on the row that held them:

    panels        the prompt and the system text; their seats' answers and errors (the seats'
                  statuses, seconds and tokens stay)
    route_turns   the last user message, the answer and the error
    shadow_calls  the answer, its tool calls and the error

and with the answers go their claims (computed from the answers, never stored). Verdict lines,
statuses, the usage ledger and so every rating stay as they were. It works in batches of
``BATCH`` rows, a transaction each, so it never holds the writer long; a row already pruned is left
alone, so every replica may run it.
"""

from __future__ import annotations

import json
import time
from typing import Any

from benchwarmers_mcp.errors import BadRequest
from benchwarmers_mcp.store.changes import log_change
from benchwarmers_mcp.store.db import Database, Reader, placeholders

DAY = 86400.0
DEFAULT_DAYS = 90
MOST_DAYS = 36500
BATCH = 500


async def retention_days(db: Reader) -> int:
    """How many days prompts and answers are kept."""
    raw = await db.fetchval("SELECT value FROM settings WHERE name = 'retention'")
    days = json.loads(raw).get("days") if raw else None
    return days if isinstance(days, int) and 1 <= days <= MOST_DAYS else DEFAULT_DAYS


async def save_retention(db: Database, days: int) -> int:
    """Keep prompts and answers ``days`` days (1 to ``MOST_DAYS``); the change is logged."""
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= MOST_DAYS:
        raise BadRequest(f"retention days is a whole number from 1 to {MOST_DAYS:,}")
    async with db.transaction() as tx:
        await tx.execute("INSERT INTO settings (name, value) VALUES ('retention', ?)"
                         " ON CONFLICT (name) DO UPDATE SET value = excluded.value", (json.dumps({"days": days}),))
        await log_change(tx, "settings.retention", "retention", {"days": days})
    return days


# (table, its key, the texts pruned and what they become), each batch of keys in one transaction
_TEXTS = {
    "route_turns": ("id", "prompt = '', answer = '', error = ''"),
    "shadow_calls": ("call", "answer = '', tool_calls = '[]', error = ''"),
}


async def _prune_panels(db: Database, before: float, now: float) -> tuple[int, int]:
    panels = seats = 0
    while True:
        async with db.transaction() as tx:
            ids = [r[0] for r in await tx.fetchall(
                "SELECT id FROM panels WHERE at < ? AND pruned_at IS NULL LIMIT ?", (before, BATCH))]
            if not ids:
                return panels, seats
            marks = placeholders(ids)
            seats += await tx.execute(f"UPDATE seats SET answer = '', error = '', pruned_at = ? WHERE panel IN ({marks})",
                                      (now, *ids))
            panels += await tx.execute(
                f"UPDATE panels SET prompt = '', system = '', pruned_at = ? WHERE id IN ({marks})", (now, *ids))


async def _prune(db: Database, table: str, before: float, now: float) -> int:
    key, texts = _TEXTS[table]
    done = 0
    while True:
        async with db.transaction() as tx:
            keys = [r[0] for r in await tx.fetchall(
                f"SELECT {key} FROM {table} WHERE at < ? AND pruned_at IS NULL LIMIT ?", (before, BATCH))]
            if not keys:
                return done
            done += await tx.execute(f"UPDATE {table} SET {texts}, pruned_at = ? WHERE {key} IN ({placeholders(keys)})",
                                     (now, *keys))


async def prune(db: Database, *, now: float | None = None, days: int | None = None) -> dict[str, Any]:
    """Prune every text older than ``days`` (the setting's when None) as of ``now``: how many panels,
    seats, route turns and shadow answers lost their texts, and the cut-off."""
    now = time.time() if now is None else now
    days = await retention_days(db) if days is None else days
    before = now - days * DAY
    panels, seats = await _prune_panels(db, before, now)
    return {"days": days, "before": before, "panels": panels, "seats": seats,
            "route_turns": await _prune(db, "route_turns", before, now),
            "shadow_calls": await _prune(db, "shadow_calls", before, now)}


__all__ = ["DEFAULT_DAYS", "MOST_DAYS", "prune", "retention_days", "save_retention"]
