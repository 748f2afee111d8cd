"""One route conversation (``/conversations/<id>``): who asked, its member, and each turn in order:
the member that answered it, the members tried before it (failovers), status, seconds, tokens and
tool calls, its prompt (the last user message) and answer as markdown, and a verdict of its own on
the turn's call id (``<conversation>.t<turn>``) with its history. The same data as
``GET /bench/conversations/{id}`` (``store.panels.conversation``)."""

from __future__ import annotations

from typing import Any

from benchwarmers_mcp.inbound import access_of
from benchwarmers_mcp.store import panels
from benchwarmers_mcp.store.verdicts import ANSWERED
from benchwarmers_mcp.web.registry import Page, View


async def load(view: View) -> dict[str, Any]:
    out = await panels.conversation(view.ctx.db, view.param("id"), access=access_of(view.request))
    return {"conversation": out["conversation"], "turns": out["turns"], "answered": ANSWERED,
            "failovers": sum(len(t["tried"]) for t in out["turns"])}


PAGE = Page("/conversations/{id}", "Route conversation", "Bench", 23, "conversation.html", load,
            live=frozenset({"verdict", "route"}), scripts=("markdown.js", "verdict.js"))
