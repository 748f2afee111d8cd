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

from datetime import timedelta
from typing import Any

from pydantic import Field
from starlette.requests import Request
from starlette.responses import Response

from benchwarmers_mcp.admin.body import Strict, admin, body_as, ctx_of, ok, query_flag
from benchwarmers_mcp.clock import Clock, day_of
from benchwarmers_mcp.context import Context
from benchwarmers_mcp.errors import NotFound
from benchwarmers_mcp.health import alerts as health_alerts
from benchwarmers_mcp.health import retire
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
    now = ctx.clock.now()
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
    changed = await alert_store.dismiss(ctx.db, body.id, ctx.clock.now())
    return ok({"dismissed": body.id, "changed": changed})


def _strip(rows: list[ProbeRow], clock: Clock, now: float) -> list[dict[str, Any]]:
    """Probe calls answered, failed and not sent (refused by the bench's own pacing) per local day,
    the last 14 days, oldest first (the Health page's outcome chart)."""
    today = day_of(clock, now)
    days = [today - timedelta(days=n) for n in range(STRIP_DAYS - 1, -1, -1)]
    counts = {d: [0, 0, 0] for d in days}
    for r in rows:
        found = counts.get(day_of(clock, r.at))
        if found is not None:
            found[0] += r.answered
            found[1] += r.n - r.answered - r.refused
            found[2] += r.refused
    return [{"date": d.isoformat(), "answered": a, "failed": f, "not_sent": n} for d, (a, f, n) in counts.items()]


def _status(m: ModelRecord, life: list[ProbeRow], retiring: set[str]) -> str:
    """retired, retiring (a rule will retire it unless it answers), ad hoc or untested (never probed),
    ok or failing (its latest life probe)."""
    if m.retired:
        return "retired"
    if m.alias in retiring:
        return "retiring"
    if not life:
        return "ad hoc" if m.ad_hoc else "untested"
    return "ok" if life[0].answered else "failing"


def _speed(latest: dict[tuple[str, str], ProbeRow], alias: str) -> dict[str, Any]:
    """The latest tiny and large probe's figures (the Health page's speed columns)."""
    out: dict[str, Any] = {}
    for prompt in ("tiny", "large"):
        r = latest.get((alias, prompt))
        if r is not None:
            out[prompt] = {"p50_s": r.p50_s, "p95_s": r.p95_s, "chars_per_s": r.chars_per_s,
                           "tokens_per_s": r.tokens_per_s, "at": iso(r.at)}
    return out


async def _health(ctx: Context, models: list[ModelRecord]) -> list[dict[str, Any]]:
    clock = ctx.clock
    now = clock.now()
    rows = await health_store.probes(ctx.db, since=now - STRIP_DAYS * 86400.0, limit=100_000)
    latest = await health_store.latest_probes(ctx.db)
    answers = await health_store.last_answers(ctx.db)
    learned = await health_store.learned_facts(ctx.db, [m.alias for m in models])
    retiring = {a.subject: a for a in await alert_store.open_alerts(ctx.db, dismissed=True) if a.kind == "retiring"}
    out = []
    for m in models:
        mine = [r for r in rows if r.alias == m.alias]
        life = [r for r in mine if r.kind in LIFE_KINDS and (r.answered or r.refused < r.n)]
        failed = next((r for r in life if r.failure), None)
        watch = retiring.get(m.alias)
        out.append({"alias": m.alias, "served": m.served, "endpoint": m.endpoint, "ad_hoc": m.ad_hoc,
                    "role": m.role, "status": _status(m, life, set(retiring)),
                    "retiring": {"retires_at": watch.detail.get("retires_at"), "days": watch.detail.get("days"),
                                 "why": watch.detail.get("why")} if watch else None,
                    "last_answer": iso(answers.get(m.alias)), "last_probe": row_view(mine[0]) if mine else None,
                    "latest_failure": row_view(failed) if failed else None, "speed": _speed(latest, m.alias),
                    "learned": learned.get(m.alias, {}), "days": _strip(mine, clock, now)})
    return out


@admin
async def get_health(request: Request) -> Response:
    ctx = ctx_of(request)
    alias = request.query_params.get("alias")
    models = [await model_store.get(ctx.db, alias)] if alias else await model_store.list_all(ctx.db)
    reply: dict[str, Any] = {"models": await _health(ctx, models), "at": iso(ctx.clock.now())}
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
