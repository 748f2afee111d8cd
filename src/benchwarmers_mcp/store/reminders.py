"""Verdict reminders: which seats a session has already been reminded about.

The Stop hook's ``pending_verdicts`` reminds an agent once per seat per session. The set lives
here, in the store, so a restart, a second server process or the stdio launcher never repeat a
reminder. Rows older than ``KEEP_DAYS`` are dropped as new ones arrive.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from benchwarmers_mcp.store import verdicts
from benchwarmers_mcp.store.db import Database, placeholders

if TYPE_CHECKING:
    from benchwarmers_mcp.context import Access

KEEP_DAYS = 90
MAX_SESSION = 200


async def due(db: Database, session: str, calls: list[str], *, access: Access,
              now: float | None = None) -> list[str]:
    """Of ``calls``, the answered seats with no verdict that ``session`` was not yet reminded about,
    of the collections ``access`` may use (``verdicts.pending``).

    The returned ids are recorded as reminded in the same transaction, so two hooks racing on one
    session never both remind about a seat.
    """
    session = session[:MAX_SESSION]
    pending = await verdicts.pending(db, calls, access=access)
    if not pending:
        return []
    now = time.time() if now is None else now
    marks = placeholders(pending)
    async with db.transaction() as tx:
        rows = await tx.fetchall(
            f"SELECT call FROM reminders WHERE session = ? AND call IN ({marks})", (session, *pending))
        told = {r[0] for r in rows}
        fresh = [c for c in pending if c not in told]
        await tx.executemany("INSERT INTO reminders (session, call, at) VALUES (?, ?, ?)",
                             [(session, c, now) for c in fresh])
        await tx.execute("DELETE FROM reminders WHERE at < ?", (now - KEEP_DAYS * 86400,))
    return fresh

