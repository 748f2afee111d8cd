"""Admin routes for models: register by served name, list with status, change facts, retire, restore.

Every model is shown with its facts and where each came from (``facts``: value, source, detail,
what it overrides; ``catalog``: the entries matched). What the user sets is one source among the
catalog, the endpoint's listing and what was learned from the model's errors, and wins over them.

A retired model keeps every seat, verdict and ledger row; restoring it is one call.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, Field
from starlette.requests import Request
from starlette.responses import Response

from benchwarmers_mcp.admin.body import Alias, Strict, admin, body_as, ctx_of, found, ok, query_flag
from benchwarmers_mcp.catalog import merge
from benchwarmers_mcp.catalog.registration import register_new
from benchwarmers_mcp.context import Context
from benchwarmers_mcp.errors import BadRequest
from benchwarmers_mcp.store import calls, verdicts
from benchwarmers_mcp.store import collections as collection_store
from benchwarmers_mcp.store import endpoints as endpoint_store
from benchwarmers_mcp.store import facts as fact_store
from benchwarmers_mcp.store import models as model_store
from benchwarmers_mcp.store.facts import FactRow
from benchwarmers_mcp.store.models import ModelRecord


def _served(value: str) -> str:
    if not 1 <= len(value) <= 200 or any(c.isspace() or not c.isprintable() for c in value):
        raise ValueError(f"{value[:80]!r} cannot be a served name: give the model's id as its endpoint lists it "
                         "(bench candidates shows them), with no spaces, at most 200 characters")
    return value


Served = Annotated[str, AfterValidator(_served)]
Tokens = Annotated[int | None, Field(ge=1, le=100_000_000)]


class RegisterIn(Strict):
    served: Served
    endpoint: str = Field(min_length=1, max_length=64)
    alias: Alias | None = None
    role: str = "general"
    ad_hoc: bool = False
    vision: bool | None = None
    tools: bool | None = None
    context_window: Tokens = None
    max_output: Tokens = None


class ChangeIn(Strict):
    alias: str = Field(min_length=1, max_length=64)
    role: str | None = None
    ad_hoc: bool | None = None
    vision: bool | None = None
    tools: bool | None = None
    context_window: Tokens = None
    max_output: Tokens = None


class RetireIn(Strict):
    alias: str = Field(min_length=1, max_length=64)
    reason: str = Field(min_length=1, max_length=300)


class AliasIn(Strict):
    alias: str = Field(min_length=1, max_length=64)


def status_of(m: ModelRecord) -> str:
    if m.retired:
        return "retired"
    return "ad hoc" if m.ad_hoc else "active"


def describe(m: ModelRecord, counts: dict[str, Any] | None = None, resting: frozenset[str] = frozenset(),
             known: list[FactRow] | None = None) -> dict[str, Any]:
    """A model as the admin API shows it; ``known``: its fact rows, shown with their sources."""
    counts = counts or {}
    out: dict[str, Any] = {
        "alias": m.alias, "served": m.served, "endpoint": m.endpoint, "family": m.family, "role": m.role,
        "status": status_of(m), "ad_hoc": m.ad_hoc, "vision": m.vision, "tools": m.tools,
        "context_window": m.context_window, "max_output": m.max_output, "last_used": m.last_used,
        "retired_at": m.retired_at, "retired_why": m.retired_why, "resting": m.alias in resting,
        "calls": counts.get("calls", 0), "useful": counts.get("useful", 0), "judged": counts.get("judged", 0)}
    if known is not None:
        out.update(facts=merge.shown(known), catalog=merge.matched(known))
    return out


async def described(ctx: Context, record: ModelRecord) -> dict[str, Any]:
    """One model with its facts and their sources (after a change: what the reply shows)."""
    return describe(record, known=(await fact_store.rows_for(ctx.db, [record.alias]))[record.alias])


async def _counts(ctx: Context, aliases: list[str]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {a: {"calls": 0, "useful": 0, "judged": 0} for a in aliases}
    for alias, n in (await calls.seat_counts(ctx.db)).items():
        if alias in out:
            out[alias]["calls"] = n
    for alias, (useful, judged) in (await verdicts.useful_counts(ctx.db, aliases)).items():
        out[alias].update(useful=useful, judged=judged)
    return out


@admin
async def list_models(request: Request) -> Response:
    """Every model with its status; ``?active=1`` leaves out the retired, ``find`` and ``role`` filter."""
    ctx = ctx_of(request)
    find = (request.query_params.get("find") or "").strip().lower()
    role = (request.query_params.get("role") or "").strip()
    everyone = await model_store.list_all(ctx.db, include_retired=not query_flag(request, "active"))
    chosen = [m for m in everyone if (not find or find in m.alias or find in m.served.lower())
              and (not role or m.role == role)]
    counts = await _counts(ctx, [m.alias for m in chosen])
    resting = await ctx.resting()
    known = await fact_store.rows_for(ctx.db, [m.alias for m in chosen])
    return ok({"models": [describe(m, counts[m.alias], resting, known[m.alias]) for m in chosen]})


@admin
async def register(request: Request) -> Response:
    """Register a served name on an endpoint, through the one registration
    (``catalog.registration.register_new``); the alias is derived from it unless one is given."""
    ctx = ctx_of(request)
    body = await body_as(request, RegisterIn, "registration")
    record = await register_new(ctx, body.served, body.endpoint, alias=body.alias, role=body.role, ad_hoc=body.ad_hoc,
                                vision=body.vision, tools=body.tools, context_window=body.context_window,
                                max_output=body.max_output)
    return ok({"model": await described(ctx, record)}, 201)


@admin
async def change(request: Request) -> Response:
    """Change what is given: role, ad hoc, vision, tools, context window, output limit (null = unknown)."""
    ctx = ctx_of(request)
    body = await body_as(request, ChangeIn, "model change")
    fields = {name: getattr(body, name) for name in body.model_fields_set if name != "alias"}
    if "role" in fields and fields["role"] is None:
        raise BadRequest("role cannot be null")
    if "ad_hoc" in fields and fields["ad_hoc"] is None:
        raise BadRequest("ad_hoc cannot be null")
    if not fields:
        raise BadRequest("nothing to change: give role, ad_hoc, vision, tools, context_window or max_output")
    record = await model_store.update(ctx.db, body.alias, **fields)
    return ok({"model": await described(ctx, record), "changed": sorted(fields)})


@admin
async def retire(request: Request) -> Response:
    """Stop seating a model. Its record stays, and so do its collection memberships, for a restore."""
    ctx = ctx_of(request)
    body = await body_as(request, RetireIn, "retirement")
    current = await model_store.get(ctx.db, body.alias)
    if current.retired:
        raise BadRequest(f"{body.alias} is already retired ({current.retired_why})")
    record = await model_store.retire(ctx.db, body.alias, body.reason.strip(), now=ctx.clock.now())
    return ok({"model": describe(record), "member_of": await collection_store.memberships(ctx.db, body.alias)})


async def restore_model(ctx: Context, alias: str) -> tuple[ModelRecord, list[str]]:
    """Restore a retired model and the collections it left (those that still exist and have room).
    Refused when its endpoint is gone or its served name is on the bench again under another alias."""
    current = await model_store.get(ctx.db, alias)
    if not current.retired:
        raise BadRequest(f"{alias} is not retired")
    if await found(endpoint_store.get(ctx.db, current.endpoint)) is None:
        raise BadRequest(f"{alias}'s endpoint {current.endpoint!r} is gone; add it again first "
                         f"(`bench endpoint add {current.endpoint} --base URL`)")
    again = [m.alias for m in await model_store.list_all(ctx.db, include_retired=False)
             if m.endpoint == current.endpoint and m.served == current.served]
    if again:
        raise BadRequest(f"{current.served} on {current.endpoint} is on the bench again as {again[0]!r}; "
                         f"retire that one first to restore {alias}")
    limits = await collection_store.gateway_settings(ctx.db)
    record = await model_store.restore(ctx.db, alias, max_members=limits.max_calls, now=ctx.clock.now())
    last = await model_store.last_retirement(ctx.db, alias)
    return record, list((last or {}).get("restored_to") or [])


@admin
async def restore(request: Request) -> Response:
    """Bring a retired model back, into the collections auto-retire took it out of."""
    ctx = ctx_of(request)
    body = await body_as(request, AliasIn, "restore")
    record, back = await restore_model(ctx, body.alias)
    return ok({"model": describe(record), "member_of": await collection_store.memberships(ctx.db, body.alias),
               "rejoined": back})
