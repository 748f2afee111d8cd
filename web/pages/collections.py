"""Collections: each with its members (and how each is doing), description, tags, explorer
shape, reply mode and merger; a new one; edit; delete, asked first."""

from __future__ import annotations

from typing import Any

from benchwarmers_mcp.store import collections as collection_store
from benchwarmers_mcp.store.collections import REPLIES, SHAPES
from benchwarmers_mcp.web.data import roster
from benchwarmers_mcp.web.registry import Page, View


async def load(view: View) -> dict[str, Any]:
    db = view.ctx.db
    gateway = await collection_store.gateway_settings(db)
    models = await roster(view.ctx)
    by_alias = {m["alias"]: m for m in models}
    items = []
    for c in await collection_store.list_all(db):
        items.append({"name": c.name, "description": c.description, "tags": list(c.tags), "members": list(c.members),
                      "seated": [by_alias[a] for a in c.members if a in by_alias],
                      "shape": c.shape or "general", "shape_set": c.shape, "reply": c.reply, "merger": c.merger,
                      "explorers": gateway.explorers_for(len(c.members))})
    return {"collections": items, "active": [m for m in models if not m["retired"]], "shapes": SHAPES,
            "replies": REPLIES, "gateway": gateway}


PAGE = Page("/collections", "Collections", "Gateway", 10, "collections.html", load,
            live=frozenset({"change", "verdict"}))
