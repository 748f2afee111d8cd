"""``GET /api/logs``: panels, route conversations and changes, newest first, never a prompt.

``?kind=panels|conversations|changes`` picks one (default: all three); ``?limit=`` caps each
(1 to 1,000, default 200).
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from benchwarmers_mcp.admin.body import admin, ctx_of, ok
from benchwarmers_mcp.errors import BadRequest
from benchwarmers_mcp.store import logs

KINDS = {"panels": logs.panels, "conversations": logs.conversations, "changes": logs.changes}


def limit_of(request: Request, default: int = 200, most: int = 1000) -> int:
    raw = request.query_params.get("limit") or str(default)
    if not raw.isdigit() or not 1 <= int(raw) <= most:
        raise BadRequest(f"limit is a whole number from 1 to {most:,}")
    return int(raw)


@admin
async def get_logs(request: Request) -> Response:
    ctx = ctx_of(request)
    kind = request.query_params.get("kind") or ""
    if kind and kind not in KINDS:
        raise BadRequest(f"kind is one of {', '.join(KINDS)} (or leave it out for all)")
    limit = limit_of(request)
    out: dict[str, Any] = {}
    for name, read in KINDS.items():
        if not kind or kind == name:
            out[name] = await read(ctx.db, limit)
    return ok(out)
