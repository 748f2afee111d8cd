"""Collections: each with its members (how each is doing, and its rating on the collection with
its interval), description, tags, explorer shape, reply mode and merger; a new one; edit; delete,
asked first. The Ratings page (``/ratings?collection=``) has every model's rating on one."""

from __future__ import annotations

from typing import Any

from benchwarmers_mcp.engine import learning
from benchwarmers_mcp.store import collections as collection_store
from benchwarmers_mcp.store.collections import REPLIES, SHAPES
from benchwarmers_mcp.web.data import roster
from benchwarmers_mcp.web.pages.ratings import mini, row_of
from benchwarmers_mcp.web.registry import Page, View


async def load(view: View) -> dict[str, Any]:
    db = view.ctx.db
    gateway = await collection_store.gateway_settings(db)
    models = await roster(view.ctx)
    by_alias = {m["alias"]: m for m in models}
    evidence = await learning.load_evidence(db)  # read once, rated per collection
    items = []
    for c in await collection_store.list_all(db):
        rated = await learning.ratings_for(db, c.qualified, learning.review_shape(c), c.members, evidence=evidence)
        ratings = {a: {**row_of(r, True), "bar": mini(*r.interval, r.mean)} for a, r in rated.items()}
        items.append({"ratings": ratings, "rated_on": learning.review_shape(c), "name": c.name, "description": c.description, "tags": list(c.tags), "members": list(c.members),
                      "seated": [by_alias[a] for a in c.members if a in by_alias],
                      "shape": c.shape or "general", "shape_set": c.shape, "reply": c.reply, "merger": c.merger,
                      "explorers": gateway.explorers_for(len(c.members))})
    return {"collections": items, "active": [m for m in models if not m["retired"]], "shapes": SHAPES,
            "replies": REPLIES, "gateway": gateway}


PAGE = Page("/collections", "Collections", "Gateway", 10, "collections.html", load,
            live=frozenset({"change", "verdict"}), styles=("ratings.css",))
