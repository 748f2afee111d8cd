"""Benchmarks: what the review suite found, each picture beside its table (the table is the
source; the pictures are drawn here, on the server, as SVG: no script, nothing fetched).

- Who to trust with a review: per model, suite recall against the share of its chances it was
  confidently wrong, each with its 95% interval;
- the bug hunt: per model, planted bugs found / wrong line / missed and their controls clean /
  false alarm (and the answers that were not a score);
- a task x model heat map of the user's own code (``?matrix=all``: every task), a table whose
  cells carry their class.
The figures are ``suite.stats.board``'s, as ``GET /api/suite/board`` gives them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from benchwarmers_mcp.store import suite as suite_store
from benchwarmers_mcp.suite import library, stats
from benchwarmers_mcp.web.registry import Page, View

# the trust plot: recall across, confidently wrong down (0 at the top: the good corner is top right)
PLOT_W, PLOT_H, LEFT, TOP, RIGHT, BOTTOM = 520, 320, 52, 16, 16, 40
HUNT_W, HUNT_ROW, HUNT_LABEL = 520, 26, 130
HUNT_PARTS = (("found", "found"), ("wrong_line", "wrong line"), ("missed", "missed"))
CONTROL_PARTS = (("clean", "clean"), ("false_alarm", "false alarm"))


def percent(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.0f}%"


def interval(pair: Sequence[float] | None) -> str:
    return "" if not pair else f"{100 * pair[0]:.0f}–{100 * pair[1]:.0f}%"


def _x(value: float) -> float:
    return round(LEFT + value * (PLOT_W - LEFT - RIGHT), 1)


def _y(value: float) -> float:
    return round(TOP + value * (PLOT_H - TOP - BOTTOM), 1)


def trust_plot(trust: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Points (with their intervals as whiskers) for the models with both figures, and the ticks."""
    points = []
    for m in trust:
        if m["recall"] is None or m["confidently_wrong"] is None:
            continue
        rx, wy = m["recall_interval"] or (m["recall"],) * 2, m["confidently_wrong_interval"] or (m["confidently_wrong"],) * 2
        right = m["recall"] > 0.7  # a label right of a dot near the right edge would leave the plot
        points.append({"alias": m["alias"], "cx": _x(m["recall"]), "cy": _y(m["confidently_wrong"]),
                       "tx": _x(m["recall"]) + (-8 if right else 8), "anchor": "end" if right else "start",
                       "ty": max(11.0, _y(m["confidently_wrong"]) - 6),
                       "x1": _x(rx[0]), "x2": _x(rx[1]), "y1": _y(wy[0]), "y2": _y(wy[1])})
    ticks = [{"label": f"{t}%", "x": _x(t / 100), "y": _y(t / 100)} for t in (0, 25, 50, 75, 100)]
    return {"points": points, "ticks": ticks, "width": PLOT_W, "height": PLOT_H, "left": LEFT, "top": TOP,
            "right": PLOT_W - RIGHT, "bottom": PLOT_H - BOTTOM, "corner": {"x": _x(0.75), "y": _y(0), "w": _x(1) - _x(0.75),
                                                                          "h": _y(0.25) - _y(0)}}


def hunt_plot(hunt: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Diverging bars: bugs to the left of the middle (found nearest it), controls to the right."""
    widest = max([max(sum(m[k] for k, _ in HUNT_PARTS), sum(m[k] for k, _ in CONTROL_PARTS)) for m in hunt] + [1])
    half = (HUNT_W - HUNT_LABEL) / 2
    middle = HUNT_LABEL + half
    scale = half / widest
    rows = []
    for i, m in enumerate(hunt):
        y, bars, at = 4 + i * HUNT_ROW, [], middle
        for key, label in HUNT_PARTS:
            w = m[key] * scale
            at -= w
            if m[key]:
                bars.append({"x": round(at, 1), "w": round(w, 1), "kind": key, "label": label, "n": m[key]})
        at = middle
        for key, label in CONTROL_PARTS:
            w = m[key] * scale
            if m[key]:
                bars.append({"x": round(at, 1), "w": round(w, 1), "kind": key, "label": label, "n": m[key]})
            at += w
        rows.append({"alias": m["alias"], "y": y, "bars": bars})
    return {"rows": rows, "width": HUNT_W, "height": 8 + len(hunt) * HUNT_ROW, "middle": middle,
            "label_x": HUNT_LABEL - 8, "bar_h": HUNT_ROW - 8}


def heat(cell: Mapping[str, Any] | None) -> dict[str, Any]:
    """One heat map cell: its class (by the share of scored answers that were right), its text."""
    if cell is None:
        return {"cls": "heat-none", "text": "—", "latest": "not asked"}
    latest = str(cell["latest"] or "")
    if not cell["scored"]:
        return {"cls": "heat-nas", "text": "no score", "latest": latest}
    step = round(4 * cell["good"] / cell["scored"])
    return {"cls": f"heat-{step}", "text": f"{cell['good']}/{cell['scored']}", "latest": latest}


def heat_map(matrix: Mapping[str, Any], tasks: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    cells = {(c["task"], c["alias"]): c for c in matrix["cells"]}
    return [{"task": t, "title": (tasks.get(t) or {}).get("title") or t,
             "kind": (tasks.get(t) or {}).get("kind") or (tasks.get(t) or {}).get("shape") or "",
             "cells": [{"alias": a, **heat(cells.get((t, a)))} for a in matrix["models"]]}
            for t in matrix["tasks"]]


async def load(view: View) -> dict[str, Any]:
    ctx = view.ctx
    catalog = await library.load(ctx.settings.home)
    tasks = {e.id: e.summary() for e in catalog.entries.values() if e.task is not None}
    everything = view.arg("matrix") == "all"
    board = stats.board(await suite_store.score_rows(ctx.db), tasks, everything=everything)
    trust = [{**m, "recall_text": percent(m["recall"]), "recall_between": interval(m["recall_interval"]),
              "wrong_text": percent(m["confidently_wrong"]),
              "wrong_between": interval(m["confidently_wrong_interval"])} for m in board["trust"]]
    hunt = [{**m, "recall_text": percent(m["recall"]), "recall_between": interval(m["recall_interval"])}
            for m in board["bug_hunt"]]
    return {"trust": trust, "trust_plot": trust_plot(board["trust"]), "hunt": hunt, "hunt_plot": hunt_plot(hunt),
            "matrix": board["matrix"], "heat": heat_map(board["matrix"], tasks), "everything": everything,
            "live_tasks": len(catalog.live()),
            "own_tasks": sum(1 for t in tasks.values() if stats.own_code(t) and not t.get("draft"))}


# not live: a suite answer is no event kind (yet); the page shows the store as it is when loaded
PAGE = Page("/benchmarks", "Benchmarks", "Observe", 5, "benchmarks.html", load, styles=("benchmarks.css",))
