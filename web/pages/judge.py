"""To judge: every seat still owed a verdict, newest panel first, filtered by collection, source
and model (``store.panels.listing`` with ``owed``, as ``GET /bench/panels?owed=1``), each seat's
answer as markdown with the verdict form of the Ask page and its claims (marked once for every
seat that made them). Judged from the keyboard alone: the keys are ``judge_keys.KEYS``,
rendered on the page, and ``static/judge.js`` takes them from what the page shows. Useful or Not
useful moves on to the panel's next seat still owed, so a five-seat panel takes six presses with
the next panel's. Errored seats are listed apart: never owed, never judged useful. The sidebar
shows how many seats are owed (``store.panels.owed_count``, as ``GET /bench/inbox/count``)."""

from __future__ import annotations

from typing import Any

from benchwarmers_mcp.engine.judging import panel_view
from benchwarmers_mcp.errors import BadRequest
from benchwarmers_mcp.inbound import access_of
from benchwarmers_mcp.judge_keys import KEYS
from benchwarmers_mcp.store import collections as collection_store
from benchwarmers_mcp.store import models as model_store
from benchwarmers_mcp.store import panels
from benchwarmers_mcp.store.panels import SOURCES, PanelFilter
from benchwarmers_mcp.store.verdicts import ANSWERED
from benchwarmers_mcp.web.registry import Page, View

PER_PAGE = 10  # panels a page shows (each with its answers and claims)


def the_filter(view: View) -> PanelFilter:
    """The page's filters from its query; 400 for a source that is none of ``SOURCES``."""
    collection = view.arg("collection").removeprefix("bench/")
    source = view.arg("source")
    if source and source not in SOURCES:
        raise BadRequest(f"source is one of {', '.join(SOURCES)}")
    return PanelFilter(owed=True, collection=f"bench/{collection}" if collection else None, source=source or None,
                       model=view.arg("model") or None, before=view.arg("before") or None, limit=PER_PAGE)


def seat_claims(seat_key: str, claims: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The claim groups a seat is in, each with the seat's own wording (``mine``)."""
    out = []
    for g in claims:
        if seat_key in g["seats"]:
            mine = next((c["text"] for c in g["claims"] if c["seat"] == seat_key), g["text"])
            out.append({**g, "mine": mine})
    return out


async def load(view: View) -> dict[str, Any]:
    db, access = view.ctx.db, access_of(view.request)
    wanted = the_filter(view)
    if wanted.collection:
        access.check(wanted.collection.removeprefix("bench/"))
    listed = await panels.listing(db, wanted, access=access)
    shown = []
    for entry in listed["panels"]:
        one = await panel_view(db, entry["id"], access=access)
        seats = [s for s in one["seats"] if s["key"] != "merger" or s["owed"]]
        shown.append({"panel": one["panel"],
                      "owed": [{**s, "claims": seat_claims(s["key"], one["claims"])} for s in seats if s["owed"]],
                      "judged": [s for s in seats if s["status"] in ANSWERED and not s["owed"]],
                      "errored": [s for s in seats if s["status"] not in ANSWERED]})
    collections = [c.name for c in await collection_store.list_all(db) if access.allows(c.name)]
    models = sorted(m.alias for m in await model_store.list_all(db))
    return {"panels": shown, "owed_total": listed["owed_total"], "next": listed["next"], "keys": KEYS,
            "chosen": {"collection": view.arg("collection").removeprefix("bench/"), "source": view.arg("source"),
                       "model": view.arg("model")},
            "collections": collections, "sources": SOURCES, "models": models, "answered": ANSWERED}


async def owed(view: View) -> int:
    return await panels.owed_count(view.ctx.db, access=access_of(view.request))


PAGE = Page("/judge", "To judge", "Bench", 25, "judge.html", load, live=frozenset({"panel", "verdict"}),
            scripts=("markdown.js", "verdict.js", "judge.js"), badge=owed)
