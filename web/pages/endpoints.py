"""Endpoints: each with its API, kind, where its key comes from (never the key), its models and
whether it is the default; test, change the key, make default, remove (with its models or not);
and a new one, tried before it is saved."""

from __future__ import annotations

from typing import Any

from benchwarmers_mcp.web.data import endpoint_rows
from benchwarmers_mcp.web.registry import Page, View


async def load(view: View) -> dict[str, Any]:
    return {"endpoints": await endpoint_rows(view.ctx)}


PAGE = Page("/endpoints", "Endpoints", "Gateway", 20, "endpoints.html", load, live=frozenset({"change"}),
            scripts=("onboard.js",))
