"""Logs: the newest panels (seats, status, judged or owed), route conversations (who answered,
turns, tool calls, failovers, the last turn) and changes, never a prompt; one filter each."""

from __future__ import annotations

from typing import Any

from benchwarmers_mcp.store import logs
from benchwarmers_mcp.web.registry import Page, View

NEWEST = 200


async def load(view: View) -> dict[str, Any]:
    db = view.ctx.db
    return {"panels": await logs.panels(db, NEWEST), "conversations": await logs.conversations(db, NEWEST),
            "changes": await logs.changes(db, NEWEST), "newest": NEWEST}


PAGE = Page("/logs", "Logs", "Observe", 20, "logs.html", load,
            live=frozenset({"panel", "seat", "verdict", "route", "change"}))
