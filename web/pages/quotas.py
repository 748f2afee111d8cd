"""Quotas: what providers said is left and when it resets, what the bench sent in 24 h and this
month per connection, who is resting and until when, the limits set by hand (and learned), and
requests and tokens per connection per day for 30 days (charts with their tables)."""

from __future__ import annotations

from typing import Any

from benchwarmers_mcp.store import ledger, stats
from benchwarmers_mcp.store import limits as limit_store
from benchwarmers_mcp.upstream.pacing import overview
from benchwarmers_mcp.web.registry import Page, View

LIMIT_NAMES = {"rpm": "requests a minute", "rpd": "requests a day", "rpmo": "requests a calendar month",
               "tpm": "tokens a minute", "tpd": "tokens a day"}


async def load(view: View) -> dict[str, Any]:
    db = view.ctx.db
    quotas = await overview(db, view.now)
    day = await ledger.totals(db, view.now - 86400)
    empty = {"calls": 0, "tokens_in": 0, "tokens_out": 0}
    for c in quotas["connections"]:
        c["day"] = day.get(c["connection"], empty)
    return {"quotas": quotas["connections"], "limits": await limit_store.all_limits(db),
            "usage": await stats.usage_by_day(db, view.now, 30), "limit_names": LIMIT_NAMES,
            "connections": await limit_store.connections(db),
            "aliases": sorted(await limit_store.model_connections(db))}


PAGE = Page("/quotas", "Quotas", "Observe", 10, "quotas.html", load,
            live=frozenset({"seat", "route", "alert", "change"}),
            scripts=("vendor/uplot/uPlot.iife.min.js", "charts.js", "quotas.js"), styles=("vendor/uplot/uPlot.min.css",))
