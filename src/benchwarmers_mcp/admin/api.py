"""The admin API: JSON on the server's own port, under ``/api/``, used by the ``bench`` CLI and
the dashboard. Each concept has its module (admin_endpoints, admin_models, admin_collections);
this one holds the status summary. Their routes are in the route table (``routes.py``).

Names stay clear of Ollama's routes (``/api/chat``, ``/api/generate``, ``/api/show``, ``/api/tags``,
``/api/version``, ``/api/ps``), which the Ollama dialect answers on the same port.
"""

from __future__ import annotations

import time
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from benchwarmers_mcp import __version__
from benchwarmers_mcp.access.policy import keys_required
from benchwarmers_mcp.admin.body import admin, ctx_of, ok
from benchwarmers_mcp.context import Context
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import endpoints as endpoint_store
from benchwarmers_mcp.store import modes
from benchwarmers_mcp.store import replicas as replica_store
from benchwarmers_mcp.store import summary as store_summary


def server_url(settings: Settings) -> str:
    if settings.public_url:
        return settings.public_url.rstrip("/")
    host = f"[{settings.bind}]" if ":" in settings.bind else settings.bind
    return f"http://{host}:{settings.port}"


async def keyless(ctx: Context) -> list[str]:
    """Endpoints that call out and have no key anywhere (local ones may not need one)."""
    return [e.name for e in await endpoint_store.list_all(ctx.db)
            if e.api != "simulated" and e.kind != "local" and not ctx.keys.has(e.key_name)]


@admin
async def status(request: Request) -> Response:
    ctx = ctx_of(request)
    s = ctx.settings
    summary: dict[str, Any] = {
        "version": __version__,
        "url": server_url(s),
        "bind": s.bind,
        "port": s.port,
        "data_folder": str(s.home),
        "config_folder": str(s.config_dir),
        "counts": await store_summary.counts(ctx.db),
        "store": {**ctx.db.where, "version": ctx.db.backend},  # a password in the URL is masked
        "replicas": {"recent": await replica_store.recent(ctx.db, time.time()), "this": ctx.replica,
                     "window_seconds": replica_store.RECENT},
        "endpoints_without_key": await keyless(ctx),
        "auth": {"admin_token": s.admin_token is not None, "keys_required": keys_required(s)},
        # the data folder and the SQLite files when others may read them, each with its chmod
        "loose_modes": [found.as_json() for found in modes.loose_for(s.home, s.store_target)],
    }
    return ok(summary)
