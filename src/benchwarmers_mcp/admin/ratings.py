"""Ratings, suggestions and the learning settings over HTTP.

``GET /bench/ratings?collection=core&shape=review`` (a gateway key; a scoped key sees only its
collections, and only the models they use: ``engine.reach``): per model the posterior mean, its 90%
interval, the evidence counts per source, the confidently-wrong share with its interval, health and
status; members first. Without a collection the ratings are over every collection and shape (an
unscoped key only).

``GET /bench/suggestions`` (a gateway key; a scoped key sees its collections' only): the open
suggestions as the last review left them (``?state=all`` adds the decided ones); it only reads.
``POST /bench/suggestions`` ``{"state"?}`` reviews the caller's collections first (what ``bench
suggestions`` does).
``POST /api/suggestion/accept`` ``{"id": 3}`` (admin) applies one: the members change and the
change log says why.

``GET /api/learning-settings``, ``POST /api/learning-settings``
``{"auto": true, "shadow": {"core": true}, "explore": "ucb", "scoped_verdicts": "own"}``: automatic
mode, shadow seats per collection (route mode), how explorers are drawn, and where a scoped
gateway key's verdicts count (``own``: on its collections' ratings only; ``everywhere``). Each
field is optional.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field
from starlette.requests import Request
from starlette.responses import Response

from benchwarmers_mcp.admin.body import Strict, admin, body_as, ctx_of, ok
from benchwarmers_mcp.engine import learning, reach
from benchwarmers_mcp.errors import BadRequest
from benchwarmers_mcp.inbound import access_of
from benchwarmers_mcp.store import collections as collection_store
from benchwarmers_mcp.store import models as model_store
from benchwarmers_mcp.store import ratings as rating_store
from benchwarmers_mcp.store.collections import SHAPES
from benchwarmers_mcp.store.ratings import LearningSettings


class AcceptIn(Strict):
    id: int = Field(ge=1)


class LearningIn(Strict):
    auto: bool | None = None
    shadow: dict[str, bool] | None = Field(None, max_length=100)
    explore: str | None = None
    scoped_verdicts: str | None = None


@admin
async def get_ratings(request: Request) -> Response:
    ctx = ctx_of(request)
    access = access_of(request)
    name = (request.query_params.get("collection") or "").strip().removeprefix("bench/")
    shape = (request.query_params.get("shape") or "").strip()
    if shape and shape not in (*SHAPES, "route"):
        raise BadRequest(f"unknown shape {shape!r}; shapes: {', '.join(s for s in (*SHAPES, 'route') if s)}")
    members: tuple[str, ...] = ()
    qualified = ""
    if name:
        access.check(name)
        collection = await collection_store.resolve(ctx.db, name)
        members, qualified = collection.members, collection.qualified
        shape = shape or learning.review_shape(collection)
    elif access.collections is not None:
        raise BadRequest("name a collection (?collection=...): this gateway key sees only its own collections")
    used = await reach.models(ctx.db, access)
    everyone = [m for m in await model_store.list_all(ctx.db)
                if (not m.retired or m.alias in members) and (used is None or m.alias in used)]
    ratings = await learning.ratings_for(ctx.db, qualified, shape, [m.alias for m in everyone])
    rows: list[dict[str, Any]] = []
    for m in everyone:
        row = ratings[m.alias].as_dict()
        row["member"] = m.alias in members
        rows.append(row)
    rows.sort(key=lambda r: (not r["member"], -r["mean"], r["alias"]))
    return ok({"collection": qualified or None, "shape": shape or None, "level": 0.9, "models": rows})


STATES = ("open", "all", "accepted", "withdrawn")


class ReviewIn(Strict):
    state: str = "open"


async def _suggestions(request: Request, state: str) -> Response:
    """The suggestions in ``state`` as stored, those of the caller's collections only."""
    if state not in STATES:
        raise BadRequest("state is open (the default), all, accepted or withdrawn")
    ctx = ctx_of(request)
    access = access_of(request)
    rows = [r for r in await rating_store.suggestions(ctx.db, state=None if state == "all" else state)
            if access.allows(r.collection)]
    settings = await rating_store.learning_settings(ctx.db)
    return ok({"suggestions": [r.as_dict() for r in rows], "auto": settings.auto})


@admin
async def get_suggestions(request: Request) -> Response:
    """``GET /bench/suggestions``: as the last review left them (one runs after every verdict). It
    only reads: a review writes suggestions, and in automatic mode changes members."""
    return await _suggestions(request, (request.query_params.get("state") or "open").strip())


@admin
async def review_suggestions(request: Request) -> Response:
    """``POST /bench/suggestions`` ``{"state"?}``: review the caller's collections now (every one for
    an unscoped caller), then answer as ``GET`` does."""
    ctx = ctx_of(request)
    body = await body_as(request, ReviewIn, "review")
    access = access_of(request)
    if access.collections is None:
        await learning.review_all(ctx.db)
    else:
        for collection in await collection_store.list_all(ctx.db):
            if access.allows(collection.name):
                await learning.review(ctx.db, collection)
    return await _suggestions(request, body.state.strip())


@admin
async def accept_suggestion(request: Request) -> Response:
    ctx = ctx_of(request)
    body = await body_as(request, AcceptIn, "suggestion")
    decided, members = await learning.accept(ctx.db, body.id, by="user")
    return ok({"suggestion": decided.as_dict(), "collection": f"bench/{decided.collection}", "members": members})


@admin
async def get_learning_settings(request: Request) -> Response:
    return ok((await rating_store.learning_settings(ctx_of(request).db)).as_dict())


@admin
async def save_learning_settings(request: Request) -> Response:
    ctx = ctx_of(request)
    body = await body_as(request, LearningIn, "learning settings")
    before = await rating_store.learning_settings(ctx.db)
    shadow = list(before.shadow)
    for name, on in (body.shadow or {}).items():
        bare = name.removeprefix("bench/")
        if on and bare not in shadow:
            shadow.append(bare)
        elif not on and bare in shadow:
            shadow.remove(bare)
    after = LearningSettings(before.auto if body.auto is None else body.auto, tuple(shadow),
                             body.explore or before.explore, body.scoped_verdicts or before.scoped_verdicts)
    return ok((await rating_store.save_learning_settings(ctx.db, after)).as_dict())
