"""Models: a card per connection with every model's facts (served name, role, context, output
limit, vision, tools, ad hoc, status); change the facts, retire with a reason, restore; and
register more, from what the endpoints serve or by served name."""

from __future__ import annotations

from typing import Any

from benchwarmers_mcp.store.models import ROLES
from benchwarmers_mcp.web.data import default_endpoint, endpoint_rows, roster
from benchwarmers_mcp.web.registry import Page, View


async def load(view: View) -> dict[str, Any]:
    models = await roster(view.ctx)
    groups: dict[str, list[dict[str, Any]]] = {}
    for m in models:
        groups.setdefault(m["connection"], []).append(m)
    return {"groups": sorted(groups.items()), "roles": ROLES, "endpoints": await endpoint_rows(view.ctx),
            "default_endpoint": await default_endpoint(view.ctx)}


# not /models: that is OpenAI's model list for clients whose base URL has no /v1
PAGE = Page("/registered", "Models", "Gateway", 30, "models.html", load, live=frozenset({"change", "seat", "verdict"}),
            scripts=("onboard.js",))
