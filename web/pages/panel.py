"""One panel (``/panels/<id>``), whoever asked it: the prompt (its attachments named), who asked
(the dashboard, the CLI, a gateway key, MCP and which client), each seat's answer as markdown
(``static/markdown.js``: HTML in an answer is shown as text) with its seat, model, call id, status,
seconds and tokens, the verdict form of the Ask page (``_judging.html``) and the call's verdict
history; and the claims agreement map: the claims only one seat made (where to look first) and
those several made, each marked real or false once for every seat that made it (``POST /api/claims``).
The same data as ``GET /bench/panels/{id}`` (``engine.judging.panel_view``)."""

from __future__ import annotations

from typing import Any

from benchwarmers_mcp.engine.judging import panel_view
from benchwarmers_mcp.inbound import access_of
from benchwarmers_mcp.store.verdicts import ANSWERED
from benchwarmers_mcp.web.registry import Page, View


def claim_sides(claims: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The map's two halves: claims only one seat made, and those several made (most seats first)."""
    lone = [g for g in claims if len(g["seats"]) == 1]
    shared = sorted((g for g in claims if len(g["seats"]) > 1), key=lambda g: -len(g["seats"]))
    return lone, shared


async def load(view: View) -> dict[str, Any]:
    out = await panel_view(view.ctx.db, view.param("id"), access=access_of(view.request))
    seats = out["seats"]
    lone, shared = claim_sides(out["claims"])
    by_key = {s["key"]: s for s in seats}
    return {"panel": out["panel"], "seats": [s for s in seats if s["key"] != "merger"],
            "merger": next((s for s in seats if s["key"] == "merger"), None), "lone": lone, "shared": shared,
            "by_key": by_key, "answered": ANSWERED, "claimed": len({k for g in out["claims"] for k in g["seats"]})}


PAGE = Page("/panels/{id}", "Panel", "Bench", 22, "panel.html", load, live=frozenset({"verdict"}),
            scripts=("markdown.js", "verdict.js"))
