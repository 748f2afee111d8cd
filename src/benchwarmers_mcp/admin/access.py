"""Admin routes for security: gateway keys, the login, and the Server-and-access view.

``POST /api/gateway-key`` makes a key and shows it once; ``GET /api/gateway-keys`` lists names
and hints (never a key); ``POST /api/gateway-key/remove`` revokes at once. ``POST /login`` trades
the admin token for the session cookie, ``POST /logout`` clears it. ``GET /api/security`` says
whether each secret is set, never its value. The guard has already checked who may call; a
refusal leaves in the admin API's one error shape (``admin_body.admin``).
"""

from __future__ import annotations

import time

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from benchwarmers_mcp.access import admin_token as auth
from benchwarmers_mcp.access import gateway_keys
from benchwarmers_mcp.access.policy import admin_token_of, describe, secure_cookie
from benchwarmers_mcp.admin.body import admin, ctx_of
from benchwarmers_mcp.errors import BadRequest, NotFound, Unauthorized
from benchwarmers_mcp.inbound import read_json
from benchwarmers_mcp.store import keys as key_store
from benchwarmers_mcp.store.names import no_control


@admin
async def create_key(request: Request) -> Response:
    ctx = ctx_of(request)
    body = await read_json(request, ctx.settings.max_body)
    key, secret = await gateway_keys.create(ctx.db, body.get("name"), body.get("collections"), body.get("rpm"))
    shown = key.public()
    return JSONResponse({"name": key.name, "key": secret, "hint": key.hint, "collections": shown["collections"],
                         "rpm": key.rpm, "created": shown["created"]},
                        headers={"Cache-Control": "no-store"})


@admin
async def list_keys(request: Request) -> Response:
    return JSONResponse({"keys": [k.public() for k in await key_store.list_all(ctx_of(request).db)]})


@admin
async def remove_key(request: Request) -> Response:
    ctx = ctx_of(request)
    name = (await read_json(request, ctx.settings.max_body)).get("name")
    if not isinstance(name, str) or not name:
        raise BadRequest('send {"name": "<key name>"}')
    if not await key_store.remove(ctx.db, no_control("gateway key name", name)):
        raise NotFound(f"no gateway key named {name[:40]!r}")
    return JSONResponse({"ok": True, "removed": name})


@admin
async def security_view(request: Request) -> Response:
    return JSONResponse(describe(ctx_of(request).settings))


@admin
async def login(request: Request) -> Response:
    settings = ctx_of(request).settings
    body = await read_json(request, settings.max_body)
    token = admin_token_of(settings)
    if not token:
        raise BadRequest("no admin token is set on this server, so there is no login: the dashboard is open "
                         "on loopback")
    given = body.get("token")
    if not isinstance(given, str) or not given:
        raise BadRequest('send {"token": "<BENCHWARMERS_ADMIN_TOKEN>"}')
    if not auth.token_matches(given, token):
        raise Unauthorized("wrong admin token", headers=dict(auth.CHALLENGE))
    now = time.time()
    response = JSONResponse({"ok": True, "expires": auth.expiry_from(now)}, headers={"Cache-Control": "no-store"})
    auth.set_session(response, token, secure=secure_cookie(settings), now=now)
    return response


@admin
async def logout(request: Request) -> Response:
    settings = ctx_of(request).settings
    response = JSONResponse({"ok": True})
    auth.clear_session(response, secure=secure_cookie(settings))
    return response
