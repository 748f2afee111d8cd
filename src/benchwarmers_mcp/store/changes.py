"""The change log: every edit of endpoints, models, collections and settings, append-only."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from benchwarmers_mcp.store.db import Database, Transaction


@dataclass(frozen=True)
class Change:
    at: float
    what: str  # e.g. "model.retire"
    subject: str  # the name or alias it changed
    detail: dict[str, Any]


async def log_change(tx: Transaction, what: str, subject: str, detail: dict[str, Any]) -> None:
    """One row per change, written in the same transaction as the change itself."""
    await tx.execute(
        "INSERT INTO changes (at, what, subject, detail) VALUES (?, ?, ?, ?)",
        (time.time(), what, subject, json.dumps(detail, default=str)),
    )


async def history(db: Database) -> list[Change]:
    """Every change, in the order made."""
    rows = await db.fetchall("SELECT at, what, subject, detail FROM changes ORDER BY id")
    return [Change(r["at"], r["what"], r["subject"], json.loads(r["detail"])) for r in rows]
