"""Health: each model's status (``engine.roster``'s word and why, as every page shows it), last answer,
latest failure and a 14-day strip; Probe now; the probe calls of the last 14 days as a chart with
its table; speed (tiny and large prompts: p50, p95, chars/s, tokens/s); and the probe history,
newest first, with a filter by model. Served at /health-checks (/health is the server's own
health check)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from benchwarmers_mcp.engine import roster
from benchwarmers_mcp.health import overview
from benchwarmers_mcp.store import health as health_store
from benchwarmers_mcp.store import models as model_store
from benchwarmers_mcp.web.registry import Page, View

HISTORY = 200


def _moment(value: str | None) -> float | None:
    return datetime.fromisoformat(value).timestamp() if value else None


def _day_tone(day: dict[str, Any]) -> str:
    if day["answered"] and day["failed"]:
        return "mixed"
    return "ok" if day["answered"] else "err" if day["failed"] else ""


def _totals(models: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The probe calls of every model per day (newest first, as every time table; the chart orders
    its own points), with each day's start for the chart."""
    days: dict[str, dict[str, Any]] = {}
    for m in models:
        for d in m["days"]:
            t = days.setdefault(d["date"], {"date": d["date"], "answered": 0, "failed": 0, "not_sent": 0,
                                            "x": int(datetime.fromisoformat(d["date"]).replace(tzinfo=UTC).timestamp())})
            for k in ("answered", "failed", "not_sent"):
                t[k] += d[k]
    return sorted(days.values(), key=lambda d: d["date"], reverse=True)


async def load(view: View) -> dict[str, Any]:
    db = view.ctx.db
    records = await model_store.list_all(db, include_retired=True)
    report = await overview.report(view.ctx, records)
    for m in report:
        m["tone"] = roster.TONES[m["status"]]
        m["strip"] = [{**d, "tone": _day_tone(d)} for d in m["days"]]
        m["answered_at"] = _moment(m["last_answer"])
        m["probed_at"] = _moment(m["last_probe"]["at"]) if m["last_probe"] else None
        for measured in m["speed"].values():
            measured["at_s"] = _moment(measured["at"])
    report.sort(key=lambda m: (m["status"] == "retired", m["alias"]))
    history = await health_store.probes(db, limit=HISTORY)
    return {"models": report, "totals": _totals(report), "history": history, "newest": HISTORY,
            "probed": sorted({r.alias for r in history}),
            "speedy": [m for m in report if m["speed"]]}


PAGE = Page("/health-checks", "Health", "Observe", 30, "health.html", load,
            live=frozenset({"probe", "alert", "change"}),
            scripts=("vendor/uplot/uPlot.iife.min.js", "charts.js"), styles=("vendor/uplot/uPlot.min.css",))
