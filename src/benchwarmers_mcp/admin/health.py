"""Health over the admin API: alerts ("action needed"), per-model health, probes now, retry.

``GET /api/alerts`` open alerts, each with its actions, and the models retired automatically
this week (``?all=1`` includes dismissed ones); ``POST /api/alerts/dismiss`` ``{"id"}``;
``GET /api/health`` every model's status, last answer, latest failure, speed, learned facts and a
14-day outcome strip (``?alias=A`` adds its probe history); ``POST /api/probe`` ``{"alias",
"kind"}`` runs one now; ``POST /api/model/retry`` ``{"alias"}`` is one call, and an answer clears
the retiring alert; ``POST /api/health/retire-all`` ``{"connection"}`` answers a held connection.
Each is one entry of ``routes.TABLE`` (access ``admin``); docs/HEALTH.md has every answer's fields.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field
from starlette.requests import Request
from starlette.responses import Response

from benchwarmers_mcp.admin.body import Strict, admin, body_as, ctx_of, ok, query_flag
from benchwarmers_mcp.clock import iso
from benchwarmers_mcp.errors import NotFound
from benchwarmers_mcp.health import alerts as health_alerts
from benchwarmers_mcp.health import overview, retire
from benchwarmers_mcp.health.overview import row_view
from benchwarmers_mcp.health.probes import KINDS, Prober
from benchwarmers_mcp.store import alerts as alert_store
from benchwarmers_mcp.store import health as health_store
from benchwarmers_mcp.store import models as model_store

STRIP_DAYS = 14


class AlertIn(Strict):
    id: int = Field(ge=1)


class ProbeIn(Strict):
    alias: str = Field(min_length=1, max_length=64)
    kind: str = "availability"


class AliasIn(Strict):
    alias: str = Field(min_length=1, max_length=64)


class ConnectionIn(Strict):
    connection: str = Field(min_length=1, max_length=64)


@admin
async def get_alerts(request: Request) -> Response:
    ctx = ctx_of(request)
    now = ctx.clock.now()
    shown = await alert_store.open_alerts(ctx.db, dismissed=query_flag(request, "all"))
    recent = await health_alerts.retired_this_week(ctx.db, now)
    return ok({"alerts": [health_alerts.describe(a) for a in shown], "retired_this_week": recent})


@admin
async def dismiss_alert(request: Request) -> Response:
    ctx = ctx_of(request)
    body = await body_as(request, AlertIn, "dismissal")
    found = await alert_store.find(ctx.db, body.id)
    if found is None or found.cleared_at is not None:
        raise NotFound(f"no open alert {body.id}; bench alerts lists them")
    changed = await alert_store.dismiss(ctx.db, body.id, ctx.clock.now())
    return ok({"dismissed": body.id, "changed": changed})


@admin
async def get_health(request: Request) -> Response:
    ctx = ctx_of(request)
    alias = request.query_params.get("alias")
    models = [await model_store.get(ctx.db, alias)] if alias else await model_store.list_all(ctx.db)
    reply: dict[str, Any] = {"models": await overview.report(ctx, models), "at": iso(ctx.clock.now())}
    if alias:
        reply["history"] = [row_view(r) for r in await health_store.probes(ctx.db, alias=alias, limit=200)]
    return ok(reply)


@admin
async def post_probe(request: Request) -> Response:
    ctx = ctx_of(request)
    body = await body_as(request, ProbeIn, "probe")
    if body.kind not in KINDS:
        raise NotFound(f"no probe kind {body.kind!r}; kinds: {', '.join(KINDS)}")
    model = await model_store.get(ctx.db, body.alias)
    rows = await Prober(ctx).probe(model, body.kind)
    return ok({"alias": model.alias, "kind": body.kind, "probes": [row_view(r) for r in rows],
               "answered": any(r.answered for r in rows)})


@admin
async def post_retry(request: Request) -> Response:
    """One call: an answer clears the retiring alert (and the pending retirement a 404 marked)."""
    ctx = ctx_of(request)
    body = await body_as(request, AliasIn, "retry")
    model = await model_store.get(ctx.db, body.alias)
    was = await alert_store.open_of(ctx.db, "retiring", model.alias)
    [row] = await Prober(ctx).probe(model, "retry")
    return ok({"alias": model.alias, "answered": bool(row.answered), "probe": row_view(row),
               "cleared": bool(row.answered and was is not None), "retired": model.retired})


@admin
async def post_retire_all(request: Request) -> Response:
    ctx = ctx_of(request)
    body = await body_as(request, ConnectionIn, "retire all")
    if await alert_store.open_of(ctx.db, "connection_held", body.connection) is None:
        raise NotFound(f"no held connection {body.connection!r}: nothing to retire (bench alerts)")
    retired = await retire.retire_all(ctx, body.connection)
    return ok({"connection": body.connection, "retired": retired})
