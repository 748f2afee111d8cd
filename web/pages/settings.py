"""Settings: gateway keys (make one: its value is shown once; revoke), the gateway settings (max
calls a panel, max explorers), and the server and access, read-only, naming which secrets are
set and never their values."""

from __future__ import annotations

from typing import Any

from benchwarmers_mcp.access.policy import describe
from benchwarmers_mcp.store import collections as collection_store
from benchwarmers_mcp.store import keys as key_store
from benchwarmers_mcp.web.data import endpoint_rows
from benchwarmers_mcp.web.registry import Page, View


async def load(view: View) -> dict[str, Any]:
    db = view.ctx.db
    s = view.ctx.settings
    return {"keys": [k.public() for k in await key_store.list_all(db)],
            "collections": [c.name for c in await collection_store.list_all(db)],
            "gateway": await collection_store.gateway_settings(db),
            "access": describe(s), "endpoints": await endpoint_rows(view.ctx),
            "server": {"data folder": str(s.home), "config folder": str(s.config_dir),
                       "seat timeout": f"{s.seat_timeout:g} s", "keep-alive": f"{s.keepalive:g} s",
                       "largest request": f"{s.max_body:,} bytes"}}


PAGE = Page("/settings", "Settings", "Control", 10, "settings.html", load, live=frozenset({"change"}),
            scripts=("settings.js",))
