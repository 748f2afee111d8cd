"""Endpoints: each with its API, kind, where its key comes from (never the key), its models and
whether it is the default and whether it is signed in with a provider; test, change the key, make
default, sign out, remove (with its models or not); and a new one: "Sign in with ..." for each
preset (``web/signin.py``) beside "Paste a key" (tried before it is saved)."""

from __future__ import annotations

from typing import Any

from benchwarmers_mcp.web.data import endpoint_rows
from benchwarmers_mcp.web.registry import Page, View
from benchwarmers_mcp.web.signin import choices


async def load(view: View) -> dict[str, Any]:
    return {"endpoints": await endpoint_rows(view.ctx), **await choices(view)}


PAGE = Page("/endpoints", "Endpoints", "Gateway", 20, "endpoints.html", load, live=frozenset({"change", "alert"}),
            scripts=("onboard.js", "connect.js"), styles=("connect.css",))
