"""Quotas and limits over HTTP.

``GET /bench/quotas``: per connection, each window with what is used and left and when it resets,
who is resting and until when, whether the connection is paused, and this month's usage. A scoped
gateway key sees only what its collections use (``engine.reach``): their models' connections, and
of a connection's model windows and rests only those models'.
``GET /api/limits``: the limits set or learned, open alerts, models pending retirement.
``POST /api/limits``: set limits for a connection or a model, ``null`` removes one::

    {"connection": "groq", "rpm": 30, "rpd": 1000, "tpm": 12000}
    {"model": "llama-3.3-70b", "rpm": 10, "tpd": null}

``POST /api/limits/resume``: end a connection's pause or a model's rest now
(``{"connection": "groq"}`` or ``{"model": "llama-3.3-70b"}``). Errors in OpenAI's shape.
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from benchwarmers_mcp.engine import reach
from benchwarmers_mcp.errors import BadRequest, NotFound
from benchwarmers_mcp.inbound import access_of, context, guarded, read_json, render_error, validation_message
from benchwarmers_mcp.store import Database, models
from benchwarmers_mcp.store import limits as limit_store
from benchwarmers_mcp.store.names import no_control
from benchwarmers_mcp.upstream import pacing as limits
from benchwarmers_mcp.upstream import quota

Count = int | None


class Subject(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    connection: str | None = Field(None, min_length=1, max_length=64)
    model: str | None = Field(None, min_length=1, max_length=64)

    @model_validator(mode="after")
    def one_subject(self) -> Subject:
        if (self.connection is None) == (self.model is None):
            raise ValueError("give exactly one of connection or model")
        return self


class LimitsIn(Subject):
    rpm: Count = Field(None, ge=1)
    rpd: Count = Field(None, ge=1)
    rpmo: Count = Field(None, ge=1)
    tpm: Count = Field(None, ge=1)
    tpd: Count = Field(None, ge=1)


def _parse(cls: type[Subject], body: dict[str, Any]) -> Any:
    try:
        return cls.model_validate(body)
    except ValidationError as e:
        raise BadRequest(f"invalid limits: {validation_message(e)}") from None


async def _check_subject(db: Database, subject: Subject) -> tuple[str, str]:
    no_control("limit subject", subject.connection or subject.model or "")
    if subject.connection is not None:
        if subject.connection not in await limit_store.connections(db):
            raise NotFound(f"no connection named {subject.connection!r}; connections are endpoint names"
                           " (or the connection an endpoint names)")
        return "connection", subject.connection
    assert subject.model is not None
    await models.get(db, subject.model)  # NotFound names the alias
    return "model", subject.model


def _listing(items: list[limit_store.UserLimit]) -> list[dict[str, Any]]:
    return [{"scope": i.scope, "subject": i.subject, "name": i.name, "value": i.value, "source": i.source}
            for i in items]


def _within(overview: dict[str, Any], aliases: frozenset[str], connections: frozenset[str]) -> dict[str, Any]:
    """The quotas overview cut to ``connections``, each one's model windows and rests to ``aliases``."""
    kept = [{**c, "windows": [w for w in c["windows"] if w["alias"] is None or w["alias"] in aliases],
             "resting": [r for r in c["resting"] if r["alias"] in aliases]}
            for c in overview["connections"] if c["connection"] in connections]
    return {**overview, "connections": kept}


@guarded(render_error)
async def get_quotas(request: Request) -> Response:
    db = context(request).db
    overview = await limits.overview(db, time.time())
    used = await reach.models(db, access_of(request))
    if used is not None:
        overview = _within(overview, used, await reach.connections(db, used))
    return JSONResponse(overview)


@guarded(render_error)
async def get_limits(request: Request) -> Response:
    db = context(request).db
    pending = [{"alias": p["alias"], "connection": p["connection"], "since": quota.iso(p["pending_retire_at"]),
                "why": p["pending_why"]} for p in await limit_store.pending_retirements(db)]
    alerts = [{**a, "at": quota.iso(a["at"])} for a in await limit_store.open_alerts(db)]
    return JSONResponse({"limits": _listing(await limit_store.all_limits(db)), "alerts": alerts,
                         "pending_retirement": pending})


@guarded(render_error)
async def post_limits(request: Request) -> Response:
    ctx = context(request)
    body = await read_json(request, ctx.settings.max_body)
    wanted: LimitsIn = _parse(LimitsIn, body)
    scope, subject = await _check_subject(ctx.db, wanted)
    names = [n for n in limit_store.LIMIT_NAMES if n in body]
    if not names:
        raise BadRequest(f"name at least one limit: {', '.join(limit_store.LIMIT_NAMES)} (null removes one)")
    if scope == "model" and "rpmo" in names:
        raise BadRequest("rpmo (requests a calendar month) is set per connection, not per model")
    for name in names:
        await limit_store.set_limit(ctx.db, scope, subject, name, getattr(wanted, name))
    mine = [i for i in await limit_store.all_limits(ctx.db) if (i.scope, i.subject) == (scope, subject)]
    return JSONResponse({"ok": True, "scope": scope, "subject": subject, "limits": _listing(mine)})


@guarded(render_error)
async def post_resume(request: Request) -> Response:
    ctx = context(request)
    wanted: Subject = _parse(Subject, await read_json(request, ctx.settings.max_body))
    scope, subject = await _check_subject(ctx.db, wanted)
    changed = await limit_store.resume(ctx.db, **{scope if scope == "connection" else "alias": subject})
    return JSONResponse({"ok": True, "scope": scope, "subject": subject, "resumed": changed > 0})
