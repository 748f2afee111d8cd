"""``GET /api/stats/usage`` (requests and tokens per connection per UTC day, ``?days=`` 1 to 90,
default 30) and ``GET /api/stats/helped`` (per model: useful of judged, from the latest verdict
on each call, panels and route conversations alike)."""

from __future__ import annotations

import time

from starlette.requests import Request
from starlette.responses import Response

from benchwarmers_mcp.admin.body import admin, ctx_of, ok
from benchwarmers_mcp.errors import BadRequest
from benchwarmers_mcp.store import stats


@admin
async def usage(request: Request) -> Response:
    raw = request.query_params.get("days") or "30"
    if not raw.isdigit() or not 1 <= int(raw) <= 90:
        raise BadRequest("days is a whole number from 1 to 90")
    return ok(await stats.usage_by_day(ctx_of(request).db, time.time(), int(raw)))


@admin
async def helped(request: Request) -> Response:
    counts = await stats.helped(ctx_of(request).db)
    return ok({"models": [{"alias": alias, **c, "share": round(c["useful"] / c["judged"], 4) if c["judged"] else None}
                          for alias, c in sorted(counts.items())]})
