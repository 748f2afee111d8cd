"""Admin routes for collections and the gateway settings that bound them.

``POST /api/collection`` creates a collection, or changes only what the body gives: ``members``
replaces the list, ``add`` and ``remove`` edit it, the other fields replace theirs.
"""

from __future__ import annotations

from pydantic import Field
from starlette.requests import Request
from starlette.responses import Response

from benchwarmers_mcp.admin.body import CollectionName, NameIn, Strict, admin, body_as, ctx_of, found, ok
from benchwarmers_mcp.context import Context
from benchwarmers_mcp.engine import collections as listing
from benchwarmers_mcp.errors import BadRequest
from benchwarmers_mcp.store import collections as collection_store
from benchwarmers_mcp.store import models as model_store
from benchwarmers_mcp.store.collections import Collection, GatewaySettings


class CollectionIn(Strict):
    name: CollectionName
    members: list[str] | None = Field(None, max_length=50)
    add: list[str] | None = Field(None, max_length=50)
    remove: list[str] | None = Field(None, max_length=50)
    description: str | None = Field(None, max_length=300)
    tags: list[str] | None = Field(None, max_length=8)
    shape: str | None = None
    reply: str | None = None
    merger: str | None = None


class GatewaySettingsIn(Strict):
    max_calls: int | None = None
    max_explorers: int | None = None


def members_after(body: CollectionIn, before: tuple[str, ...]) -> tuple[str, ...]:
    members = list(dict.fromkeys(body.members if body.members is not None else before))
    missing = [a for a in body.remove or () if a not in members and a not in (body.add or ())]
    if missing:
        raise BadRequest(f"not members, so nothing to remove: {', '.join(missing)}")
    members = [a for a in members if a not in set(body.remove or ())]
    members += [a for a in body.add or () if a not in members]
    if not members:
        raise BadRequest("a collection needs at least one member (members or add)")
    return tuple(members)


async def _refuse_retired(ctx: Context, joining: list[str]) -> None:
    retired = [m.alias for m in await model_store.list_all(ctx.db) if m.retired and m.alias in joining]
    if retired:
        raise BadRequest(f"retired, so not seated: {', '.join(retired)}; restore first (`bench model restore`)")


@admin
async def list_collections(request: Request) -> Response:
    ctx = ctx_of(request)
    return ok({"collections": await listing.entries(ctx.db)})


@admin
async def save_collection(request: Request) -> Response:
    ctx = ctx_of(request)
    body = await body_as(request, CollectionIn, "collection")
    before = await found(collection_store.get(ctx.db, body.name))
    old = before or Collection(body.name)
    members = members_after(body, old.members)
    await _refuse_retired(ctx, [a for a in members if a not in old.members])
    wanted = Collection(
        body.name, members,
        (body.description if body.description is not None else old.description).strip(),
        tuple(t.strip() for t in body.tags) if body.tags is not None else old.tags,
        body.shape if body.shape is not None else old.shape,
        body.reply if body.reply is not None else old.reply,
        body.merger if body.merger is not None else old.merger)
    saved = await collection_store.save(ctx.db, wanted)
    [entry] = await listing.entries(ctx.db, only={saved.name})
    return ok({"collection": entry, "created": before is None}, 201 if before is None else 200)


@admin
async def remove_collection(request: Request) -> Response:
    ctx = ctx_of(request)
    body = await body_as(request, NameIn, "collection removal")
    await collection_store.delete(ctx.db, body.name)
    return ok({"removed": body.name})


def _settings_dict(s: GatewaySettings) -> dict[str, int]:
    return {"max_calls": s.max_calls, "max_explorers": s.max_explorers}


@admin
async def get_gateway_settings(request: Request) -> Response:
    ctx = ctx_of(request)
    return ok({"gateway": _settings_dict(await collection_store.gateway_settings(ctx.db))})


@admin
async def save_gateway_settings(request: Request) -> Response:
    """Change max calls (seats per panel) and max explorers; a collection bigger than max calls refuses."""
    ctx = ctx_of(request)
    body = await body_as(request, GatewaySettingsIn, "gateway settings")
    current = await collection_store.gateway_settings(ctx.db)
    wanted = GatewaySettings(body.max_calls if body.max_calls is not None else current.max_calls,
                             body.max_explorers if body.max_explorers is not None else current.max_explorers)
    too_big = [c.name for c in await collection_store.list_all(ctx.db) if len(c.members) > wanted.max_calls]
    if too_big and wanted.max_calls >= 1:
        raise BadRequest(f"max_calls {wanted.max_calls} is fewer than the members of: {', '.join(too_big)}; "
                         "remove members first")
    saved = await collection_store.save_gateway_settings(ctx.db, wanted)
    return ok({"gateway": _settings_dict(saved)})
