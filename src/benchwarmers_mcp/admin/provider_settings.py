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

import importlib.util

from pydantic import Field
from starlette.requests import Request
from starlette.responses import Response

from benchwarmers_mcp.admin.body import Strict, admin, body_as, ctx_of, ok
from benchwarmers_mcp.catalog.data import current
from benchwarmers_mcp.catalog.own_app import kept_off
from benchwarmers_mcp.context import Context
from benchwarmers_mcp.errors import BadRequest
from benchwarmers_mcp.store import clients, names, own_app
from benchwarmers_mcp.store import endpoints as endpoint_store

DIFFERENCES = (
    "Pacing by the provider's own rate limits: the built-in client reads every answer's rate-limit headers, so "
    "it learns the provider's windows and paces calls before a 429; through llm those headers are not seen, so "
    "no window is learned (your limits still hold, and a 429's stated wait still rests the model).",
    "The ledger's full record: calls through llm are still counted in the ledger by the bench, but with the "
    "tokens llm reports and without the provider's quota records (Quotas shows no reported windows for them).",
    "One guarded outbound client: the built-in client never follows a redirect (a key never reaches another "
    "host) and shares one connection pool; llm's client is its own (the openai SDK's for OpenAI-compatible "
    "endpoints), with its own redirect and proxy behaviour.",
    "Every API the bench speaks: through llm, chat and responses endpoints use llm's OpenAI plugin at their "
    "base URL, and any other API needs the llm plugin that serves it (llm install llm-anthropic, ...).",
)


class ClientIn(Strict):
    client: str | None


class OwnAppIn(Strict):
    provider: str = Field(min_length=1, max_length=64)
    own_app_only: bool


def llm_installed() -> bool:
    return importlib.util.find_spec("llm") is not None


async def client_view(ctx: Context) -> dict[str, object]:
    """``GET /api/client``'s reply (the Settings page shows the same)."""
    chosen = await clients.chosen(ctx.db)
    return {"client": chosen or ctx.settings.client, "chosen": chosen, "default": ctx.settings.client,
            "choices": list(clients.CLIENTS), "llm_installed": llm_installed(), "differences": list(DIFFERENCES)}


@admin
async def get_client(request: Request) -> Response:
    return ok(await client_view(ctx_of(request)))


@admin
async def post_client(request: Request) -> Response:
    ctx = ctx_of(request)
    body = await body_as(request, ClientIn, "client choice")
    if body.client == "llm" and not llm_installed():
        raise BadRequest("the llm client is not installed here: pip install 'benchwarmers[llm]' (and the llm "
                         "plugins your endpoints need), then choose it")
    await clients.choose(ctx.db, body.client)
    return ok(await client_view(ctx))


async def own_app_view(ctx: Context) -> dict[str, object]:
    """``GET /api/own-app-free``'s reply: the providers switched on, the models kept off now, and
    the catalog providers of this bench's endpoints (the ones Settings offers a switch for)."""
    switched = await own_app.providers(ctx.db)
    catalog = await current(ctx.db)
    mine = {p for p in (catalog.provider_for(e.base_url) for e in await endpoint_store.list_all(ctx.db)
                        if not e.simulated) if p}
    return {"providers": sorted(switched), "kept_off": await kept_off(ctx.db),
            "connected": [{"id": p, "name": catalog.provider_name(p), "own_app_only": p in switched}
                          for p in sorted(mine | switched)]}


@admin
async def get_own_app(request: Request) -> Response:
    return ok(await own_app_view(ctx_of(request)))


@admin
async def post_own_app(request: Request) -> Response:
    ctx = ctx_of(request)
    body = await body_as(request, OwnAppIn, "own-app switch")
    provider = body.provider.strip().lower()
    if not names.fits(provider, names.ALIAS):
        raise BadRequest(f"{body.provider!r} is not a provider id: use the catalog's (bench discover lists them, "
                         "e.g. openrouter)")
    await own_app.switch(ctx.db, provider, body.own_app_only)
    return ok(await own_app_view(ctx))
