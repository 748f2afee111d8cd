"""The admin API: JSON on the server's own port, under ``/api/``, used by the ``bench`` CLI and
the dashboard. Each concept has its module (admin_endpoints, admin_models, admin_collections);
this one holds the status summary. Their routes are in the route table (``routes.py``).

Names stay clear of Ollama's routes (``/api/chat``, ``/api/generate``, ``/api/show``, ``/api/tags``,
``/api/version``, ``/api/ps``), which the Ollama dialect answers on the same port.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from benchwarmers_mcp import __version__
from benchwarmers_mcp.access.policy import keys_required
from benchwarmers_mcp.admin.body import admin, ctx_of, ok
from benchwarmers_mcp.context import Context
from benchwarmers_mcp.settings import Settings


def server_url(settings: Settings) -> str:
    if settings.public_url:
        return settings.public_url.rstrip("/")
    host = f"[{settings.bind}]" if ":" in settings.bind else settings.bind
    return f"http://{host}:{settings.port}"


COUNTS = {
    "endpoints": "SELECT COUNT(*) FROM endpoints",
    "models": "SELECT COUNT(*) FROM models WHERE retired_at IS NULL AND ad_hoc = 0",
    "ad_hoc": "SELECT COUNT(*) FROM models WHERE retired_at IS NULL AND ad_hoc = 1",
    "retired": "SELECT COUNT(*) FROM models WHERE retired_at IS NOT NULL",
    "collections": "SELECT COUNT(*) FROM collections",
    "panels": "SELECT COUNT(*) FROM panels",
    "calls": "SELECT COUNT(*) FROM seats",
    "verdicts": "SELECT COUNT(DISTINCT call) FROM verdicts",
    "owed": "SELECT COUNT(*) FROM seats WHERE status IN ('ok', 'empty') AND call NOT IN (SELECT call FROM verdicts)",
}


async def counts(ctx: Context) -> dict[str, int]:
    """Every count in one query (one read, one consistent snapshot), not one round trip each."""
    row = await ctx.db.fetchone("SELECT " + ", ".join(f"({sql}) AS {name}" for name, sql in COUNTS.items()))
    return {name: row[name] for name in COUNTS}


async def keyless(ctx: Context) -> list[str]:
    """Endpoints that call out and have no key anywhere (local ones may not need one)."""
    rows = await ctx.db.fetchall("SELECT name, key_name, kind, api FROM endpoints ORDER BY name")
    return [r["name"] for r in rows
            if r["api"] != "simulated" and r["kind"] != "local" and not ctx.keys.has(r["key_name"])]


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
        "counts": await counts(ctx),
        "endpoints_without_key": await keyless(ctx),
        "auth": {"admin_token": s.admin_token is not None, "keys_required": keys_required(s)},
    }
    return ok(summary)
