"""Health over the admin API: alerts ("action needed"), per-model health, probes now, retry.

``GET /api/alerts`` open alerts, each with its actions, and the models retired automatically
this week (``?all=1`` includes dismissed ones); ``POST /api/alerts/dismiss`` ``{"id"}``;
``GET /api/health`` every model's status, last answer, latest failure, speed, learned facts and a
14-day outcome strip (``?alias=A`` adds its probe history); ``POST /api/probe`` ``{"alias",
"kind"}`` runs one now; ``POST /api/model/retry`` ``{"alias"}`` is one call, and an answer clears
the retiring alert; ``POST /api/health/retire-all`` ``{"connection"}`` answers a held connection.
``routes()`` also mounts the scheduler's and the onboarding queue's routes.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pydantic import Field
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from benchwarmers_mcp.admin import onboarding as admin_onboarding
from benchwarmers_mcp.admin import scheduler as admin_scheduler
from benchwarmers_mcp.admin.body import Strict, admin, body_as, ctx_of, ok, query_flag
from benchwarmers_mcp.context import Context
from benchwarmers_mcp.errors import NotFound
from benchwarmers_mcp.health import alerts as health_alerts
from benchwarmers_mcp.health import retire
from benchwarmers_mcp.health.clock import Clock, clock_of, day_of
from benchwarmers_mcp.health.probes import KINDS, Prober
from benchwarmers_mcp.store import alerts as alert_store
from benchwarmers_mcp.store import health as health_store
from benchwarmers_mcp.store import models as model_store
from benchwarmers_mcp.store.health import LIFE_KINDS, ProbeRow
from benchwarmers_mcp.store.models import ModelRecord
from benchwarmers_mcp.upstream.quota import iso

WEEK = 7 * 86400.0
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


def row_view(r: ProbeRow) -> dict[str, Any]:
    return {"id": r.id, "at": iso(r.at), "kind": r.kind, "prompt": r.prompt, "n": r.n, "answered": r.answered,
            "refused": r.refused, "errors": r.errors, "timeouts": r.timeouts, "failure": r.failure,
            "detail": r.detail, "p50_s": r.p50_s, "p95_s": r.p95_s, "min_s": r.min_s, "max_s": r.max_s,
            "chars_per_s": r.chars_per_s, "tokens_per_s": r.tokens_per_s, "tokens_in": r.tokens_in,
            "tokens_out": r.tokens_out, "reasoning": r.reasoning, "learned": r.learned}


@admin
async def get_alerts(request: Request) -> Response:
    ctx = ctx_of(request)
    now = clock_of(ctx).now()
    shown = await alert_store.open_alerts(ctx.db, dismissed=query_flag(request, "all"))
    recent = [{"alias": r["alias"], "at": iso(r["at"]), "why": r["why"], "rule": r["rule"],
               "collections": r["collections"],
               "actions": [{"label": "Restore", "method": "POST", "path": "/api/model/restore",
                            "body": {"alias": r["alias"]}, "cli": f"bench model restore {r['alias']}"}]}
              for r in await model_store.retired_since(ctx.db, now - WEEK, by="auto")]
    return ok({"alerts": [health_alerts.describe(a) for a in shown], "retired_this_week": recent})


@admin
async def dismiss_alert(request: Request) -> Response:
    ctx = ctx_of(request)
    body = await body_as(request, AlertIn, "dismissal")
    found = await alert_store.find(ctx.db, body.id)
    if found is None or found.cleared_at is not None:
        raise NotFound(f"no open alert {body.id}; bench alerts lists them")
    changed = await alert_store.dismiss(ctx.db, body.id, clock_of(ctx).now())
    return ok({"dismissed": body.id, "changed": changed})


def _strip(rows: list[ProbeRow], clock: Clock, now: float) -> list[dict[str, Any]]:
    """Calls answered and failed per day, the last 14 days (the Health page's outcome chart)."""
    today = day_of(clock, now)
    days = [today - timedelta(days=n) for n in range(STRIP_DAYS - 1, -1, -1)]
    answered = dict.fromkeys(days, 0)
    failed = dict.fromkeys(days, 0)
    for r in rows:
        day = day_of(clock, r.at)
        if day in answered:
            answered[day] += r.answered
            failed[day] += r.n - r.answered
    return [{"date": d.isoformat(), "answered": answered[d], "failed": failed[d]} for d in days]


def _status(m: ModelRecord, life: list[ProbeRow], retiring: set[str]) -> str:
    if m.retired:
        return "retired"
    if m.alias in retiring:
        return "retiring"
    if not life:
        return "ad hoc" if m.ad_hoc else "untested"
    return "ok" if life[0].answered else "failing"


async def _health(ctx: Context, clock: Clock, models: list[ModelRecord]) -> list[dict[str, Any]]:
    now = clock.now()
    rows = await health_store.probes(ctx.db, since=now - STRIP_DAYS * 86400.0, limit=100_000)
    latest = await health_store.latest_probes(ctx.db)
    answers = await health_store.last_answers(ctx.db)
    learned = await health_store.learned(ctx.db)
    retiring = {a.subject for a in await alert_store.open_alerts(ctx.db, dismissed=True) if a.kind == "retiring"}
    out = []
    for m in models:
        mine = [r for r in rows if r.alias == m.alias]
        life = [r for r in mine if r.kind in LIFE_KINDS]
        failed = next((r for r in life if r.failure), None)
        speed = {p: {k: latest[m.alias, p].__dict__[k] for k in ("p50_s", "p95_s", "chars_per_s", "tokens_per_s")}
                 | {"at": iso(latest[m.alias, p].at)} for p in ("tiny", "large") if (m.alias, p) in latest}
        out.append({"alias": m.alias, "endpoint": m.endpoint, "status": _status(m, life, retiring),
                    "last_answer": iso(answers.get(m.alias)), "last_probe": row_view(mine[0]) if mine else None,
                    "latest_failure": row_view(failed) if failed else None, "speed": speed,
                    "learned": {k: v for k, v in learned.get(m.alias, {}).items() if k != "probe_quirks"},
                    "days": _strip(mine, clock, now)})
    return out


@admin
async def get_health(request: Request) -> Response:
    ctx = ctx_of(request)
    clock = clock_of(ctx)
    alias = request.query_params.get("alias")
    models = [await model_store.get(ctx.db, alias)] if alias else await model_store.list_all(ctx.db)
    reply: dict[str, Any] = {"models": await _health(ctx, clock, models), "at": iso(clock.now())}
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
    rows = await Prober(ctx, clock_of(ctx)).probe(model, body.kind)
    return ok({"alias": model.alias, "kind": body.kind, "probes": [row_view(r) for r in rows],
               "answered": any(r.answered for r in rows)})


@admin
async def post_retry(request: Request) -> Response:
    """One call: an answer clears the retiring alert (and the pending retirement a 404 marked)."""
    ctx = ctx_of(request)
    body = await body_as(request, AliasIn, "retry")
    model = await model_store.get(ctx.db, body.alias)
    was = await alert_store.open_of(ctx.db, "retiring", model.alias)
    [row] = await Prober(ctx, clock_of(ctx)).probe(model, "retry")
    return ok({"alias": model.alias, "answered": bool(row.answered), "probe": row_view(row),
               "cleared": bool(row.answered and was is not None), "retired": model.retired})


@admin
async def post_retire_all(request: Request) -> Response:
    ctx = ctx_of(request)
    body = await body_as(request, ConnectionIn, "retire all")
    if await alert_store.open_of(ctx.db, "connection_held", body.connection) is None:
        raise NotFound(f"no held connection {body.connection!r}: nothing to retire (bench alerts)")
    retired = await retire.retire_all(ctx, body.connection, clock_of(ctx))
    return ok({"connection": body.connection, "retired": retired})


def routes() -> list[BaseRoute]:
    """Health, the scheduler and onboarding, for ``app.routes()`` (one line there)."""
    return [
        Route("/api/alerts", get_alerts, methods=["GET"]),
        Route("/api/alerts/dismiss", dismiss_alert, methods=["POST"]),
        Route("/api/health", get_health, methods=["GET"]),
        Route("/api/probe", post_probe, methods=["POST"]),
        Route("/api/model/retry", post_retry, methods=["POST"]),
        Route("/api/health/retire-all", post_retire_all, methods=["POST"]),
        *admin_scheduler.routes(),
        *admin_onboarding.routes(),
    ]
