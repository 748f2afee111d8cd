"""Hubs over the admin API (``upstream/hubs``).

``GET /api/hub/upstreams?endpoint=<hub>``: every model the hub serves, with the upstream connection
it comes through, the model's name at that upstream, and its alias on the bench if it has one.
``POST /api/hub/sync`` ``{"endpoint"}``: follow the hub's renames, make an endpoint per upstream
connection and put every registered model of the hub on its own (the reply says what moved and
what was renamed). ``POST /api/hub/register`` ``{"endpoint", "upstream_model", "base_url",
"connection", "served"?, "key_name"?, "bench"?}``: add a model through the hub's admin API (its
admin key; the upstream's key, named ``key_name`` in the key store, is sent to the hub and nowhere
else), then put it on the bench unless ``bench`` is false.
"""

from __future__ import annotations

from pydantic import Field
from starlette.requests import Request
from starlette.responses import Response

from benchwarmers_mcp.admin.body import KeyName, Strict, admin, body_as, ctx_of, ok
from benchwarmers_mcp.errors import BadRequest
from benchwarmers_mcp.store import hubs as hub_store
from benchwarmers_mcp.store import models as model_store
from benchwarmers_mcp.store.endpoints import Endpoint, validate
from benchwarmers_mcp.upstream.hubs import sync as hub_sync
from benchwarmers_mcp.upstream.hubs.base import NewModel, connection_of


class HubIn(Strict):
    endpoint: str = Field(min_length=1, max_length=64)


class RegisterIn(HubIn):
    upstream_model: str = Field(min_length=1, max_length=200)
    base_url: str = Field(min_length=1, max_length=500)
    connection: str = Field(min_length=1, max_length=40)
    served: str | None = Field(None, min_length=1, max_length=200)
    key_name: KeyName | None = None
    bench: bool = True


@admin
async def get_upstreams(request: Request) -> Response:
    ctx = ctx_of(request)
    name = (request.query_params.get("endpoint") or "").strip()
    if not name:
        raise BadRequest("name the hub: /api/hub/upstreams?endpoint=<name>")
    entry, listed = await hub_sync.upstreams(ctx, name)
    ours = {name, *(r.endpoint for r in await hub_store.routes_of(ctx.db, name))}
    aliases = {m.served: m.alias for m in await model_store.list_all(ctx.db) if m.endpoint in ours}
    return ok({"endpoint": name, "hub": entry.hub,
               "upstreams": [{"served": u.served, "connection": u.connection, "upstream_model": u.upstream_model,
                              "alias": aliases.get(u.served)} for u in listed]})


@admin
async def post_sync(request: Request) -> Response:
    ctx = ctx_of(request)
    body = await body_as(request, HubIn, "hub sync")
    return ok((await hub_sync.sync(ctx, body.endpoint)).as_dict())


@admin
async def post_register(request: Request) -> Response:
    ctx = ctx_of(request)
    body = await body_as(request, RegisterIn, "hub registration")
    validate(Endpoint("check", body.base_url))  # the upstream's URL, checked as an endpoint's is
    connection = connection_of(body.connection)
    if not connection:
        raise BadRequest("connection names the upstream (letters, digits, dots and dashes), e.g. groq")
    if body.key_name and not ctx.keys.has(body.key_name):
        raise BadRequest(f"no key named {body.key_name!r} in the key store: add it first (bench endpoint key ...)")
    new = NewModel(body.served or body.upstream_model, body.upstream_model, body.base_url.rstrip("/"), connection,
                   body.key_name)
    return ok(await hub_sync.register(ctx, body.endpoint, new, bench=body.bench), 201)
