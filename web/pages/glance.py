"""At a glance: the first run, one step at a time, until the bench has answered once; then what
needs doing, the roster (every model: status, role, context, what it can do, helped useful of
judged, suite recall, rating with its interval over every collection, last answer) with filters, and the helped share per model as a chart and its table; the newest panels, each a link to its page, and the verdicts owed, a link to To judge."""

from __future__ import annotations

from typing import Any

from benchwarmers_mcp.engine import learning
from benchwarmers_mcp.engine import roster as engine_roster
from benchwarmers_mcp.store import collections as collection_store
from benchwarmers_mcp.store import logs, stats
from benchwarmers_mcp.web.data import default_endpoint, first_run, roster, suite_recall
from benchwarmers_mcp.web.pages.ratings import mini, row_of
from benchwarmers_mcp.web.registry import Page, View
from benchwarmers_mcp.web.signin import choices

RECENT = 5  # the newest panels it links to

WATCH = ("retiring", "gone", "failing", "resting")  # the statuses "Models to watch" lists, with why


async def load(view: View) -> dict[str, Any]:
    db = view.ctx.db
    counts = await stats.counts(db)
    suite = await suite_recall(view.ctx)
    listed = await roster(view.ctx)
    rated = await learning.ratings_for(db, "", "", [m["alias"] for m in listed])  # over every collection and shape
    models = [{**m, "suite": suite.get(m["alias"]),
               "rating": {**row_of(rated[m["alias"]], False), "bar": mini(*rated[m["alias"]].interval, rated[m["alias"]].mean)}}
              for m in listed]
    collections = await collection_store.list_all(db)
    run = first_run(counts)
    return {
        "presets": (await choices(view))["presets"] if run.state(1) == "now" else [],
        "counts": counts,
        "run": run,
        "models": models,
        "active": [m for m in models if not m["retired"]],
        "judged": sorted((m for m in models if m["judged"]), key=lambda m: (-m["useful"] / m["judged"], m["alias"])),
        "connections": sorted({m["connection"] for m in models}),
        "statuses": [s for s in engine_roster.STATUSES if any(m["status"] == s for m in models)],
        "watch": [m for m in models if m["status"] in WATCH],
        "roles": sorted({m["role"] for m in models}),
        "first_collection": collections[0].name if collections else None,
        "default_endpoint": await default_endpoint(view.ctx),
        "recent": await logs.panels(db, RECENT),
    }


PAGE = Page("/", "At a glance", "Bench", 10, "glance.html", load,
            live=frozenset({"seat", "panel", "verdict", "change", "alert", "route"}),
            scripts=("onboard.js", "connect.js", "vendor/uplot/uPlot.iife.min.js", "charts.js"),
            styles=("vendor/uplot/uPlot.min.css", "ratings.css", "connect.css"))
