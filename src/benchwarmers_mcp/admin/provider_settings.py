"""Two provider settings over the admin API, for the Settings page and ``bench client`` /
``bench own-app``.

``GET /api/client`` ``{"client", "chosen", "default", "choices", "llm_installed", "differences"}``:
who calls upstreams (``builtin`` or ``llm``: ``providers/llm_client.py``), the choice made here (or
null), the environment's default (``BENCH_CLIENT``), and what the built-in client does that the
llm one cannot (``differences``, the sentences Settings shows). ``POST /api/client``
``{"client": "builtin" | "llm" | null}`` (null: back to the default); llm is refused until it is
installed.

``GET /api/own-app-free`` ``{"providers": [...], "kept_off": {alias: why}, "connected": [...]}``:
the providers whose free models work only in their own app (``catalog/own_app.py``): kept off
panels and out of Discover's free list, with the models kept off now, and each catalog provider
this bench's endpoints reach (``{"id", "name", "own_app_only"}``). ``POST /api/own-app-free`` ``{"provider", "own_app_only": bool}``.
"""

from __future__ import annotations

from pydantic import Field
from starlette.requests import Request
from starlette.responses import Response

from benchwarmers_mcp.admin.body import Strict, admin, body_as, ctx_of, ok
from benchwarmers_mcp.catalog.own_app import overview
from benchwarmers_mcp.errors import BadRequest
from benchwarmers_mcp.providers.llm_client import client_view, llm_installed
from benchwarmers_mcp.store import clients, names, own_app


class ClientIn(Strict):
    client: str | None


class OwnAppIn(Strict):
    provider: str = Field(min_length=1, max_length=64)
    own_app_only: bool


@admin
async def get_client(request: Request) -> Response:
    return ok(await client_view(ctx_of(request).db, ctx_of(request).settings.client))


@admin
async def post_client(request: Request) -> Response:
    ctx = ctx_of(request)
    body = await body_as(request, ClientIn, "client choice")
    if body.client == "llm" and not llm_installed():
        raise BadRequest("the llm client is not installed here: pip install 'benchwarmers[llm]' (and the llm "
                         "plugins your endpoints need), then choose it")
    await clients.choose(ctx.db, body.client)
    return ok(await client_view(ctx.db, ctx.settings.client))


@admin
async def get_own_app(request: Request) -> Response:
    return ok(await overview(ctx_of(request).db))


@admin
async def post_own_app(request: Request) -> Response:
    ctx = ctx_of(request)
    body = await body_as(request, OwnAppIn, "own-app switch")
    provider = body.provider.strip().lower()
    if not names.fits(provider, names.ALIAS):
        raise BadRequest(f"{body.provider!r} is not a provider id: use the catalog's (bench discover lists them, "
                         "e.g. openrouter)")
    await own_app.switch(ctx.db, provider, body.own_app_only)
    return ok(await overview(ctx.db))
