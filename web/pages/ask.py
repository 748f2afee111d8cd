"""Ask: pick a collection, write a prompt, attach files; each seat's answer appears the moment
that seat is done (``POST /api/ask`` streams them), labelled by seat, model and call id, its answer as markdown, with
Useful / Not useful, a note, and real and false claims for each (``POST /api/verdict``); the
recent panels link to each panel's page."""

from __future__ import annotations

from typing import Any

from benchwarmers_mcp.store import collections as collection_store
from benchwarmers_mcp.store import logs
from benchwarmers_mcp.web.registry import Page, View


async def load(view: View) -> dict[str, Any]:
    collections = await collection_store.list_all(view.ctx.db)
    wanted = view.arg("collection").removeprefix("bench/")
    names = [c.name for c in collections]
    return {"collections": collections, "chosen": wanted if wanted in names else (names[0] if names else ""),
            "recent": await logs.panels(view.ctx.db, 8)}


PAGE = Page("/ask", "Ask", "Bench", 20, "ask.html", load, live=frozenset({"panel", "seat", "verdict", "change"}),
            scripts=("markdown.js", "verdict.js", "ask.js"))
