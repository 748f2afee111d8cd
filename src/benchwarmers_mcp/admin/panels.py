"""Panels to judge over HTTP: the list and the inbox, one panel, one route conversation, the count
of seats owed a verdict, and a claim marked on every seat that made it.

The ``/bench/...`` routes are the gateway's (a gateway key when keys are required; a scoped key
sees and judges only its own collections' panels); the ``/api/...`` twins are the dashboard's
(its login: every collection, and the marks it writes are the ``dashboard``'s, as ``/api/verdict``).
The handlers are the same; errors are in OpenAI's shape.

    GET  /bench/panels?owed=1&collection=C&source=S&model=M&limit=50&before=<panel id>
    GET  /bench/panels/{id}
    GET  /bench/conversations/{id}
    GET  /bench/inbox/count
    POST /bench/claims {"panel", "claim": <group id>, "judgement": "real" | "false" | "none"}
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from benchwarmers_mcp.admin.body import ADMIN_MAX_BODY, admin, ctx_of, ok, query_flag
from benchwarmers_mcp.context import Access
from benchwarmers_mcp.engine.judging import mark_claim, panel_view
from benchwarmers_mcp.engine.learning import after_verdict
from benchwarmers_mcp.engine.verdicts import parse_claim_mark
from benchwarmers_mcp.errors import BadRequest
from benchwarmers_mcp.inbound import access_of, read_json
from benchwarmers_mcp.store import names, panels
from benchwarmers_mcp.store.panels import MOST, SOURCES, PanelFilter

DASHBOARD = "dashboard"  # the key name the dashboard's marks are written under (as ``admin/verdicts.py``)


def _limit(request: Request) -> int:
    raw = (request.query_params.get("limit") or "50").strip()
    if not raw.isdigit() or not 1 <= int(raw) <= MOST:
        raise BadRequest(f"limit is a whole number from 1 to {MOST}")
    return int(raw)


def panel_filter(request: Request, access: Access) -> PanelFilter:
    """The list's filters from the query; 400 for a bad one, 403 for a collection out of scope."""
    q = request.query_params
    collection = (q.get("collection") or "").strip().removeprefix("bench/").split(":", 1)[0] or None
    if collection is not None:
        access.check(collection)
    source = (q.get("source") or "").strip() or None
    if source is not None and source not in SOURCES:
        raise BadRequest(f"source is one of {', '.join(SOURCES)}")
    model, before = (q.get("model") or "").strip() or None, (q.get("before") or "").strip() or None
    for what, value in (("the model", model), ("before", before)):
        if value is not None:
            names.no_control(what, value)
    return PanelFilter(owed=query_flag(request, "owed"), collection=None if collection is None else f"bench/{collection}",
                       source=source, model=model, before=before, limit=_limit(request))


@admin
async def get_panels(request: Request) -> Response:
    ctx, access = ctx_of(request), access_of(request)
    return ok(await panels.listing(ctx.db, panel_filter(request, access), access=access))


@admin
async def get_panel(request: Request) -> Response:
    ctx = ctx_of(request)
    return ok(await panel_view(ctx.db, request.path_params["id"], access=access_of(request)))


@admin
async def get_conversation(request: Request) -> Response:
    ctx = ctx_of(request)
    return ok(await panels.conversation(ctx.db, request.path_params["id"], access=access_of(request)))


@admin
async def get_inbox_count(request: Request) -> Response:
    ctx = ctx_of(request)
    return ok({"owed": await panels.owed_count(ctx.db, access=access_of(request))})


async def _claims(request: Request, access: Access) -> Response:
    ctx = ctx_of(request)
    wanted = parse_claim_mark(await read_json(request, min(ctx.settings.max_body, ADMIN_MAX_BODY)))
    group, written = await mark_claim(ctx.db, wanted.panel.strip(), wanted.claim.strip(), wanted.judgement,
                                      access=access)
    if written:
        await after_verdict(ctx, written[0])  # the next panel reflects it (every seat is of one collection)
    return ok({"ok": True, "written": written, "claim": group})


@admin
async def post_claims(request: Request) -> Response:
    """``POST /bench/claims``: as the caller's key."""
    return await _claims(request, access_of(request))


@admin
async def post_dashboard_claims(request: Request) -> Response:
    """``POST /api/claims``: as the dashboard (a login is the admin's: every collection)."""
    access_of(request)
    return await _claims(request, Access.unscoped(DASHBOARD))
