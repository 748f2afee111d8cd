"""Endpoint set-up the dashboard needs beyond ``admin.endpoints``: try an endpoint before it is
saved, and choose the default endpoint.

``POST /api/endpoint/try`` takes the same body as ``POST /api/endpoint`` (name, base, api, kind,
key ...) and makes one listing call with it, saving nothing: the key in the body is used for
that one call and forgotten (without one, the stored key of that name is used). The outcome is
the reply (``ok``, ``served``, ``sample`` or ``error``), not the status, as ``/api/endpoint/test``.

``GET/POST /api/endpoint/default``: the endpoint the dashboard offers first (``{"name": ...}``).
"""

from __future__ import annotations

import time
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from benchwarmers_mcp.admin.body import NameIn, admin, body_as, ctx_of, found, ok
from benchwarmers_mcp.admin.endpoints import EndpointIn, merged
from benchwarmers_mcp.errors import ProviderError
from benchwarmers_mcp.store import endpoints as endpoint_store
from benchwarmers_mcp.store import preferences
from benchwarmers_mcp.upstream.listing import served_names


@admin
async def try_endpoint(request: Request) -> Response:
    ctx = ctx_of(request)
    body = await body_as(request, EndpointIn, "endpoint")
    existing = await found(endpoint_store.get(ctx.db, body.name))
    endpoint = merged(body, existing)
    endpoint_store.validate(endpoint)
    stored = bool(endpoint.key_name) and ctx.keys.has(endpoint.key_name)
    result: dict[str, Any] = {"name": endpoint.name, "base_url": endpoint.base_url, "saved": existing is not None,
                              "key": "given" if body.key else "stored" if stored else "none"}
    started = time.monotonic()
    try:
        names = await served_names(ctx, endpoint, key=body.key)
    except ProviderError as e:
        result.update(ok=False, error=e.message, upstream_status=e.upstream_status)
    else:
        result.update(ok=True, served=len(names), sample=names[:10])
    result["seconds"] = round(time.monotonic() - started, 3)
    return ok(result)


@admin
async def get_default(request: Request) -> Response:
    return ok({"name": await preferences.default_endpoint(ctx_of(request).db)})


@admin
async def set_default(request: Request) -> Response:
    ctx = ctx_of(request)
    body = await body_as(request, NameIn, "default endpoint")
    await preferences.set_default_endpoint(ctx.db, body.name)
    return ok({"name": body.name})
