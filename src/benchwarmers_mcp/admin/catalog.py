"""Admin routes for the catalog: its state, a refresh, Discover (and adding from it), one model's
facts with their sources, and dismissing a candidate.

    GET  /api/catalog              where the catalog's data comes from, each feed's last refresh
    POST /api/catalog/refresh      fetch the feeds now (the only way, besides the catalog job)
    GET  /api/discover             ?free=1&new=1&find=&reach=&provider=&limit=&offset=
    POST /api/discover/add         {model: "provider/model", endpoint?, alias?, role?, mode?, now?}
    GET  /api/model/facts          ?alias=
    POST /api/candidates/dismiss   {key: "served@endpoint", undo?}

Each is one entry of ``routes.TABLE`` (access ``admin``, OpenAI's error shape).
"""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any

from pydantic import Field
from starlette.requests import Request
from starlette.responses import Response

from benchwarmers_mcp.admin import models as admin_models
from benchwarmers_mcp.admin.body import Strict, admin, body_as, ctx_of, ok, query_flag
from benchwarmers_mcp.catalog import data, discover, merge
from benchwarmers_mcp.catalog.data import Catalog
from benchwarmers_mcp.catalog.discover import AddPlan, Filters
from benchwarmers_mcp.catalog.registration import register_new
from benchwarmers_mcp.catalog.sync import (
    ensure_current,
    first_seen,
    listing_within,
    note_seen,
    refresh_all,
    status,
)
from benchwarmers_mcp.context import Context
from benchwarmers_mcp.errors import BadRequest, NotFound
from benchwarmers_mcp.health import onboarding
from benchwarmers_mcp.store import catalog as catalog_store
from benchwarmers_mcp.store import endpoints as endpoint_store
from benchwarmers_mcp.store import facts as fact_store
from benchwarmers_mcp.store import models as model_store
from benchwarmers_mcp.store import onboarding as onboarding_store
from benchwarmers_mcp.upstream.listing import Listing

MAX_ROWS = 5000
ADD_LISTING_TIMEOUT = 30.0  # Discover's add reads the endpoint's listing to find its spelling


class AddIn(Strict):
    model: str = Field(min_length=3, max_length=300)
    endpoint: str | None = Field(None, min_length=1, max_length=64)
    alias: str | None = Field(None, max_length=64)
    role: str | None = None
    mode: str = "full"  # the onboarding queue's: full, quick or quick-adhoc
    now: bool = False  # register at once instead (no probe, no suite)


class DismissIn(Strict):
    key: str = Field(min_length=3, max_length=300)
    undo: bool = False


async def caught_up(ctx: Context) -> Catalog:
    """The catalog, with every model's facts derived from it and its entries noted as seen (once per
    catalog version): what a POST that uses the catalog does first. A GET only reads (``data.current``)
    and shows the facts as the last catch-up (or refresh) left them."""
    catalog = await ensure_current(ctx)
    await note_seen(ctx, catalog)
    return catalog


@admin
async def catalog_status(request: Request) -> Response:
    return ok(await status(ctx_of(request)))


@admin
async def catalog_refresh(request: Request) -> Response:
    """Fetch models.dev, OpenRouter and FreeLLMAPI now; a feed that fails keeps its last good copy."""
    return ok(await refresh_all(ctx_of(request)))


def _number(request: Request, name: str, default: int, top: int) -> int:
    raw = (request.query_params.get(name) or "").strip()
    if not raw:
        return default
    if not raw.isdigit():
        raise BadRequest(f"{name} is a whole number, not {raw!r}")
    return min(int(raw), top)


def _filters(request: Request) -> Filters:
    reach = request.query_params.get("reach") or None
    if reach is not None and reach not in discover.REACH:
        raise BadRequest(f"reach is one of {', '.join(discover.REACH)}")
    return Filters(free=query_flag(request, "free"), new=query_flag(request, "new"),
                   find=request.query_params.get("find") or "", reach=reach,
                   provider=request.query_params.get("provider") or None)


@admin
async def discover_rows(request: Request) -> Response:
    """One row per (provider, model) of the catalog, with its facts and reach on this install."""
    ctx = ctx_of(request)
    filters = _filters(request)
    limit, offset = _number(request, "limit", 200, MAX_ROWS), _number(request, "offset", 0, 10_000_000)
    catalog = await data.current(ctx.db)  # as it stands: a GET derives and notes nothing (a refresh does)
    now = time.time()
    chosen = discover.rows(catalog, await endpoint_store.list_all(ctx.db), await fact_store.matched_entries(ctx.db),
                           await first_seen(ctx, catalog, now), now, filters)
    return ok({"rows": chosen[offset:offset + limit], "total": len(chosen), "offset": offset, "limit": limit,
               "catalog": catalog.version, "filters": asdict(filters), **discover.choices(catalog, chosen)})


async def _served_as_listed(ctx: Context, plan: AddPlan) -> tuple[str, Listing, str | None]:
    """The endpoint's own spelling of the planned served name and its listing, when it answers
    (a note when it does not: the model is registered as planned, and its listing is not asked twice)."""
    listed, problem = await listing_within(ctx, plan.endpoint, ADD_LISTING_TIMEOUT)
    if listed is None:
        return plan.served, Listing([]), (f"{plan.endpoint.name} did not answer its listing ({problem}); "
                                          "the catalog's name is used as planned")
    if not listed.names:
        return plan.served, listed, None
    served = discover.resolve_listed(plan.served, listed.names)
    if served is None:
        close = discover.close_names(plan.served, listed.names)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise BadRequest(f"{plan.endpoint.name} does not list {plan.served}{hint}")
    return served, listed, None


async def onboard(ctx: Context, endpoint: str, served: str, *, alias: str | None = None, role: str | None = None,
                  mode: str = "full", now: bool = False, listed: Listing | None = None) -> dict[str, Any]:
    """The one place Discover hands a model on: to the onboarding queue (checked, registered with
    the catalog's facts, probed, and for ``full`` the suite), or with ``now`` registered at once
    through the same registration (``catalog.registration.register_new``)."""
    if now:
        record = await register_new(ctx, served, endpoint, alias=alias, role=role or "general", listed=listed)
        return {"model": await admin_models.described(ctx, record)}
    [queued] = await onboarding.enqueue(ctx, [{"served": served, "endpoint": endpoint, "mode": mode, "alias": alias,
                                              "role": role}])
    item = await onboarding_store.get(ctx.db, queued)
    return {"queued": queued, "item": onboarding.describe(item) if item else None}


@admin
async def discover_add(request: Request) -> Response:
    """Bring a catalog model on through an endpoint that can serve it (named, or the best one): to
    the onboarding queue (202), or registered at once with ``now`` (201)."""
    ctx = ctx_of(request)
    body = await body_as(request, AddIn, "add")
    catalog = await caught_up(ctx)
    plan = discover.plan_add(catalog, await endpoint_store.list_all(ctx.db), body.model, body.endpoint)
    served, listed, note = await _served_as_listed(ctx, plan)
    out = await onboard(ctx, plan.endpoint.name, served, alias=body.alias, role=body.role, mode=body.mode,
                        now=body.now, listed=listed)
    out.update(entry=plan.entry.key, endpoint=plan.endpoint.name, served=served, via=plan.via)
    if note:
        out["note"] = note
    return ok(out, 201 if body.now else 202)


@admin
async def model_facts(request: Request) -> Response:
    """Every fact of one model with its source, the entries matched, and what each value overrides."""
    ctx = ctx_of(request)
    alias = (request.query_params.get("alias") or "").strip()
    if not alias:
        raise BadRequest("give ?alias=")
    record = await model_store.get(ctx.db, alias)
    catalog = await data.current(ctx.db)
    endpoint = await endpoint_store.get(ctx.db, record.endpoint)
    rows = (await fact_store.rows_for(ctx.db, [alias]))[alias]
    serving = None if endpoint.simulated else catalog.provider_for(endpoint.base_url)
    return ok({"alias": alias, "served": record.served, "endpoint": record.endpoint, "provider": serving,
               "facts": merge.shown(rows), "catalog": merge.matched(rows), "version": catalog.version})


def _split_key(key: str) -> tuple[str, str]:
    served, at, endpoint = key.rpartition("@")
    if not at or not served or not endpoint:
        raise BadRequest(f"a candidate is <served>@<endpoint> (as bench candidates lists it), not {key!r}")
    return served, endpoint


@admin
async def dismiss_candidate(request: Request) -> Response:
    """Leave a candidate out of ``bench candidates`` from now on (``undo``: bring it back)."""
    ctx = ctx_of(request)
    body = await body_as(request, DismissIn, "dismissal")
    served, endpoint = _split_key(body.key)
    await endpoint_store.get(ctx.db, endpoint)
    if body.undo:
        if not await catalog_store.undismiss(ctx.db, endpoint, served):
            raise NotFound(f"{body.key} is not dismissed")
    else:
        await catalog_store.dismiss(ctx.db, endpoint, served)
    return ok({"key": body.key, "endpoint": endpoint, "served": served, "dismissed": not body.undo})

