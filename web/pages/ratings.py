"""Ratings: each model's rating with its uncertainty, for one collection and shape (or over
everything), as a chart of interval bars beside the table that holds the same figures.

Each rating is ``engine.learning.ratings_for``'s (as ``GET /bench/ratings`` gives it): the mean of
a Beta posterior over "its next answer here is useful", its 90% interval, the evidence behind it
per source, the share of judged answers that were confidently wrong (with its interval), health
and status. Members first, then everyone else, best first. The chart is drawn here, on the server,
as SVG (no script, nothing fetched) and hidden from screen readers: the table is its text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from benchwarmers_mcp.engine import learning
from benchwarmers_mcp.engine.ratings import Rating
from benchwarmers_mcp.store import Database
from benchwarmers_mcp.store import collections as collection_store
from benchwarmers_mcp.store import models as model_store
from benchwarmers_mcp.store.collections import SHAPES, Collection
from benchwarmers_mcp.web.registry import Page, View
from benchwarmers_mcp.web.render import weight

# the chart: a row per model, its interval a bar across 0-100%, its mean a dot on the bar
CHART_W, ROW, LABEL, RIGHT, TOP, AXIS = 560, 24, 150, 16, 6, 22
SOURCES = ("panel", "route", "shadow", "suite")
STATUS_TONE = {"rated": "ok", "learning": "", "unrated": "", "confidently wrong": "err"}
NONE = "—"  # no evidence: nothing to show, never the prior dressed as a figure
SHAPE_CHOICES = tuple(s for s in (*SHAPES, "route") if s)


def pct(value: float) -> str:
    return f"{100 * value:.0f}%"


def between(pair: Sequence[float]) -> str:
    return f"{100 * pair[0]:.0f}–{100 * pair[1]:.0f}%"


def evidence_text(counts: Mapping[str, Mapping[str, int]]) -> str:
    """Per source: useful of judged (``panel 7/9 · suite 2/3``); health is its own column."""
    parts = []
    for source in SOURCES:
        c = counts.get(source)
        if c and c.get("good", 0) + c.get("bad", 0):
            parts.append(f"{source} {c.get('good', 0)}/{c.get('good', 0) + c.get('bad', 0)}")
    return " · ".join(parts)


def plural(n: int | float, one: str, many: str = "") -> str:
    return f"{n:g} {one if n == 1 else many or one + 's'}"


def judged_count(counts: Mapping[str, Mapping[str, int]]) -> int:
    """The judged answers behind a rating (verdicts and suite answers, raw), as the evidence column counts them."""
    return sum(c.get("good", 0) + c.get("bad", 0) for s, c in counts.items() if s != "health")


def row_of(r: Rating, member: bool) -> dict[str, Any]:
    """A rating as the table and the chart show it: each figure beside the evidence it stands on (the
    interval and the count together), and ``—`` where there is no evidence at all."""
    low, high = r.interval
    wlow, whigh = r.wrong_interval
    n = judged_count(r.counts)
    health = r.counts.get("health", {})
    answered, calls = health.get("good", 0), health.get("good", 0) + health.get("bad", 0)
    hlow, hhigh = r.health_interval
    return {"alias": r.alias, "member": member, "mean": r.mean, "low": low, "high": high,
            "mean_text": pct(r.mean) if r.judged else NONE, "between": between(r.interval) if r.judged else NONE,
            "weight": weight(r.weight), "judged_n": n, "verdicts_text": plural(n, "judged answer") if n else NONE,
            "evidence": evidence_text(r.counts),
            "wrong_text": f"{r.wrong_verdicts} of {n}" if n else NONE,
            "wrong_between": between((wlow, whigh)) if n else NONE, "wrong_verdicts": r.wrong_verdicts,
            "health_text": f"{answered} of {calls}" if calls else NONE,
            "health_between": between((hlow, hhigh)) if calls else NONE, "health_calls": calls,
            "judged": r.judged, "status": r.status, "tone": STATUS_TONE.get(r.status, "")}


def _x(value: float) -> float:
    return round(LABEL + value * (CHART_W - LABEL - RIGHT), 1)


def chart(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Interval bars: one row per model, the bar from the interval's low end to its high end, a
    dot at the mean; members' bars carry their own class."""
    bars = []
    for i, r in enumerate(rows):
        y = TOP + i * ROW
        bars.append({"alias": r["alias"], "member": r["member"], "y": y, "mid": y + ROW / 2,
                     "x1": _x(r["low"]), "w": max(1.0, round(_x(r["high"]) - _x(r["low"]), 1)),
                     "cx": _x(r["mean"]), "status": r["status"]})
    bottom = TOP + len(rows) * ROW
    ticks = [{"label": f"{t}%", "x": _x(t / 100)} for t in (0, 25, 50, 75, 100)]
    return {"bars": bars, "ticks": ticks, "width": CHART_W, "height": bottom + AXIS, "top": TOP, "bottom": bottom,
            "label_x": LABEL - 8, "bar_h": ROW - 10}


def mini(low: float, high: float, mean: float, width: int = 100) -> dict[str, float]:
    """One interval in a small inline bar (the Collections page's Rating column)."""
    return {"w": width, "x1": round(low * width, 1), "bw": max(1.0, round((high - low) * width, 1)),
            "cx": round(mean * width, 1)}


async def rated(db: Database, collection: Collection | None, shape: str) -> list[dict[str, Any]]:
    """Every registered model (retired ones only when members) rated on ``collection`` (None:
    everywhere) and ``shape`` ("": every shape); members first, then best first."""
    members = collection.members if collection else ()
    everyone = [m.alias for m in await model_store.list_all(db) if not m.retired or m.alias in members]
    ratings = await learning.ratings_for(db, collection.qualified if collection else "", shape, everyone)
    rows = [row_of(ratings[a], a in members) for a in everyone]
    rows.sort(key=lambda r: (not r["member"], -r["mean"], r["alias"]))
    return rows


async def load(view: View) -> dict[str, Any]:
    db = view.ctx.db
    collections = await collection_store.list_all(db)
    name = view.arg("collection").removeprefix("bench/")
    chosen = next((c for c in collections if c.name == name), None)
    shape = view.arg("shape")
    shape = shape if shape in SHAPE_CHOICES else (learning.review_shape(chosen) if chosen else "")
    rows = await rated(db, chosen, shape)
    return {"rows": rows, "chart": chart(rows), "collections": [c.name for c in collections],
            "chosen": chosen.name if chosen else "", "unknown": name if name and chosen is None else "",
            "shape": shape, "shapes": SHAPE_CHOICES, "judged": sum(1 for r in rows if r["status"] != "unrated")}


PAGE = Page("/ratings", "Ratings", "Bench", 30, "ratings.html", load,
            live=frozenset({"verdict", "seat", "change"}), styles=("ratings.css",))
