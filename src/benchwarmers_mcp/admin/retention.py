"""``GET /api/settings/retention`` -> ``{"days": n}``; ``POST /api/settings/retention {"days": n}``
sets how many days prompts and answers are kept (1 to 36,500; default 90) and prunes at once what
that no longer keeps (``pruned``: the counts); the housekeeping prunes the rest as it ages
(``store/retention.py``: verdicts, statuses, usage and ratings stay)."""

from __future__ import annotations

from pydantic import Field
from starlette.requests import Request
from starlette.responses import Response

from benchwarmers_mcp.admin.body import Strict, admin, body_as, ctx_of, ok
from benchwarmers_mcp.store import retention


class RetentionIn(Strict):
    days: int = Field(ge=1, le=retention.MOST_DAYS)


@admin
async def get_retention(request: Request) -> Response:
    return ok({"days": await retention.retention_days(ctx_of(request).db), "default": retention.DEFAULT_DAYS})


@admin
async def post_retention(request: Request) -> Response:
    wanted = await body_as(request, RetentionIn, "retention")
    ctx = ctx_of(request)
    days = await retention.save_retention(ctx.db, wanted.days)
    pruned = await retention.prune(ctx.db, now=ctx.clock.now(), days=days)
    return ok({"days": days, "default": retention.DEFAULT_DAYS, "pruned": pruned})
