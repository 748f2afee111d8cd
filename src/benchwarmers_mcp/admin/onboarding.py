"""The onboarding queue over the admin API.

``GET /api/onboarding``: every item not cleared, with its state, step and log. ``POST
/api/onboarding`` ``{"items": [{"served", "endpoint", "mode", "alias", "role"}]}`` (``served`` may be
a candidate's ``served@endpoint``; ``mode`` full, quick or quick-adhoc; ``alias`` and ``role``
optional): queued in order, or refused whole when any item is invalid. ``POST /api/onboarding/stop`` skips what is queued and ends the running item
after its step; ``POST /api/onboarding/clear`` hides finished items. Each is one entry of
``routes.TABLE``; every answer carries the queue as ``GET /api/onboarding`` shows it.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field
from starlette.requests import Request
from starlette.responses import Response

from benchwarmers_mcp.admin.body import Strict, admin, body_as, ctx_of, ok
from benchwarmers_mcp.health import onboarding
from benchwarmers_mcp.store import onboarding as queue


class ItemIn(Strict):
    served: str = Field(min_length=1, max_length=264)
    endpoint: str | None = Field(None, max_length=64)
    mode: str = "full"
    alias: str | None = Field(None, max_length=64)
    role: str | None = None


class BatchIn(Strict):
    items: list[ItemIn] = Field(max_length=50)


async def _listing(request: Request) -> dict[str, Any]:
    items = await queue.items(ctx_of(request).db)
    waiting = [i for i in items if i.state in ("queued", "running")]
    counts = {state: sum(1 for i in items if i.state == state) for state in queue.STATES}
    return {"items": [onboarding.describe(i) for i in items], "waiting": len(waiting),
            "running": next((i.id for i in items if i.state == "running"), None), "counts": counts}


@admin
async def get_queue(request: Request) -> Response:
    return ok(await _listing(request))


@admin
async def post_batch(request: Request) -> Response:
    ctx = ctx_of(request)
    body = await body_as(request, BatchIn, "onboarding batch")
    ids = await onboarding.enqueue(ctx, [i.model_dump() for i in body.items])
    return ok({"queued": ids, **await _listing(request)}, 202)


@admin
async def post_stop(request: Request) -> Response:
    ctx = ctx_of(request)
    return ok({**await queue.stop(ctx.db, ctx.clock.now()), **await _listing(request)})


@admin
async def post_clear(request: Request) -> Response:
    cleared = await queue.clear(ctx_of(request).db)
    return ok({"cleared": cleared, **await _listing(request)})
