"""Settings: gateway keys (make one: its value is shown once; revoke), the gateway settings (max
calls a panel, max explorers), learning (automatic mode, how explorers are drawn, where a scoped
key's verdicts count: over ``/api/learning-settings``), the scheduler (its mode, each job's times, on or off, last and next
run, Run now, the latest runs: over ``/api/scheduler``), who calls upstreams (the built-in client or
llm's, and what llm's cannot do: ``/api/client``), the providers whose free models work only in
their own app (``/api/own-app-free``), and the server and access, read-only,
naming which secrets are set and never their values."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from benchwarmers_mcp.access.policy import describe
from benchwarmers_mcp.catalog.own_app import overview
from benchwarmers_mcp.providers.llm_client import client_view
from benchwarmers_mcp.store import collections as collection_store
from benchwarmers_mcp.store import keys as key_store
from benchwarmers_mcp.store import ratings as rating_store
from benchwarmers_mcp.web.data import endpoint_rows
from benchwarmers_mcp.web.registry import Page, View


def _moment(value: str | None) -> float | None:
    return datetime.fromisoformat(value).timestamp() if value else None


async def scheduler(view: View) -> dict[str, Any] | None:
    """The scheduler's overview (``GET /api/scheduler``) with its times as moments; None when this
    server runs none."""
    if view.ctx.scheduler is None:
        return None
    found = await view.ctx.scheduler.overview()
    for job in found["jobs"]:
        job["next_at"] = _moment(job["next_run"])
        last = job["last_run"]
        if last:
            last["at_s"], last["finished_s"] = _moment(last["at"]), _moment(last["finished"])
    for run in found["runs"]:
        run["at_s"], run["finished_s"] = _moment(run["at"]), _moment(run["finished"])
    return found


async def load(view: View) -> dict[str, Any]:
    db = view.ctx.db
    s = view.ctx.settings
    return {"keys": [k.public() for k in await key_store.list_all(db)],
            "collections": [c.name for c in await collection_store.list_all(db)],
            "gateway": await collection_store.gateway_settings(db),
            "learning": await rating_store.learning_settings(db),
            "access": describe(s), "endpoints": await endpoint_rows(view.ctx), "scheduler": await scheduler(view),
            "client": await client_view(db, s.client), "own_app": await overview(db),
            "server": {"data folder": str(s.home), "config folder": str(s.config_dir),
                       "seat timeout": f"{s.seat_timeout:g} s", "keep-alive": f"{s.keepalive:g} s",
                       "largest request": f"{s.max_body:,} bytes"}}


PAGE = Page("/settings", "Settings", "Control", 10, "settings.html", load, live=frozenset({"change", "scheduler"}),
            scripts=("settings.js",))
