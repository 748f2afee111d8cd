"""``POST /api/verdict``: the dashboard's verdict, the same body and reply as ``/bench/verdict``.

``/bench/verdict`` is a gateway route: once an admin token is set it wants a gateway key. The
dashboard holds a login instead, so it records verdicts here; the row is the same, its
``key_name`` is ``dashboard``. A login is the admin's: every collection's calls (unscoped). The
same rules: the verdict replaces the call's last one whole, and its ``claims`` mark groups of the
call's panel on every seat that made them.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from benchwarmers_mcp.admin.body import ADMIN_MAX_BODY, admin, ctx_of, ok
from benchwarmers_mcp.context import Access
from benchwarmers_mcp.engine.judging import judge
from benchwarmers_mcp.engine.learning import after_verdict
from benchwarmers_mcp.engine.verdicts import parse_verdict
from benchwarmers_mcp.inbound import read_json

WHO = "dashboard"


@admin
async def post_verdict(request: Request) -> Response:
    ctx = ctx_of(request)
    judged = parse_verdict(await read_json(request, min(ctx.settings.max_body, ADMIN_MAX_BODY)))
    recorded, written = await judge(ctx.db, judged, access=Access.unscoped(WHO))
    if written:
        await after_verdict(ctx, recorded.call)  # the next panel reflects it
    return ok({"ok": True, "written": written, "recorded": recorded.as_dict()})
