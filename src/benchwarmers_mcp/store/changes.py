"""The change log: every edit of endpoints, models, collections and settings, append-only."""

from __future__ import annotations

import json
import time
from typing import Any

from benchwarmers_mcp.store.db import Transaction


async def log_change(tx: Transaction, what: str, subject: str, detail: dict[str, Any]) -> None:
    """One row per change, written in the same transaction as the change itself."""
    await tx.execute(
        "INSERT INTO changes (at, what, subject, detail) VALUES (?, ?, ?, ?)",
        (time.time(), what, subject, json.dumps(detail, default=str)),
    )
