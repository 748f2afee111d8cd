"""Signing in with a provider over the admin API, and the browser's way back.

``GET /api/connect/presets``: every preset (``upstream/connect/presets.py``) with its base URL, API,
kind, flows, addresses, client id (the kept one, the preset's, or none: ``needs_client_id``), what
its free tier is known to limit, which facts are unverified, and the environment variables that
replace them; ``callback`` is this server's return address for browser flows.

``POST /api/connect/start`` ``{"preset", "flow"?, "endpoint"?, "client_id"?}``: begin a sign-in
(201). The reply's ``flow`` has its ``id`` and ``status``; a ``key`` or ``oauth`` flow adds
``authorize_url`` (open it in the browser: the provider sends it back to ``/connect/callback`` on
this server, which finishes the flow and goes on to ``/endpoints?signin=<id>``); a ``device`` flow
has ``user_code`` and ``verification_uri`` (type the code there, on any device) and finishes by
itself; ``local`` is finished at once, with the ``models`` the runtime lists.

``GET /api/connect/flow?id=<id>[&wait=<seconds, at most 60>]``: a flow's status (``pending``, ``done``, ``failed``, ``denied``,
``expired``, ``cancelled``) and error; with ``wait``, a pending flow's answer waits for it to end
(or the seconds to pass); ``POST /api/connect/cancel`` ``{"id"}``.

``GET /api/connect/signins``: the signed-in endpoints: preset, flow, when signed in, when the
token expires and was renewed, whether it ended (and why). ``POST /api/connect/signout``
``{"endpoint"}``: revoke where the provider can, remove the tokens, hold the endpoint's calls until
a new sign-in. No reply ever holds a token.

``GET /connect/callback`` (open: the provider's redirect arrives without the login cookie, which is
``SameSite=Strict``; its state, 43 random characters kept only as a SHA-256, is the credential):
finishes the flow it names once, then a small page of this server that goes on to
``/endpoints?signin=<id>`` by itself (a meta refresh: the login cookie is ``SameSite=Strict``, and a
redirect chain that began on the provider's site would go without it); a state no flow here sent is
a small page of its own saying so (400).
"""

from __future__ import annotations

import html
import logging
from typing import Any

from pydantic import Field
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from benchwarmers_mcp.admin.body import Strict, admin, body_as, ctx_of, ok
from benchwarmers_mcp.context import Context
from benchwarmers_mcp.errors import BadRequest, BenchError
from benchwarmers_mcp.store import signins as signin_store
from benchwarmers_mcp.store.signins import SignIn
from benchwarmers_mcp.upstream.connect.flows import CALLBACK_PATH, SignIns
from benchwarmers_mcp.upstream.connect.presets import env_names

log = logging.getLogger("benchwarmers.connect")
MAX_WAIT = 60.0  # the longest ``GET /api/connect/flow?wait=`` holds a pending flow's answer
PAGE_HEADERS = {"Cache-Control": "no-store", "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'",
                "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY"}


class StartIn(Strict):
    preset: str = Field(min_length=1, max_length=40)
    flow: str | None = Field(None, max_length=10)
    endpoint: str | None = Field(None, max_length=64)
    client_id: str | None = Field(None, max_length=200)


class FlowIn(Strict):
    id: str = Field(min_length=1, max_length=64)


class SignOutIn(Strict):
    endpoint: str = Field(min_length=1, max_length=64)


def signins_of(ctx: Context) -> SignIns:
    """The app's sign-in flows (a context a test built by hand gets its own)."""
    if not isinstance(ctx.connect, SignIns):
        ctx.connect = SignIns(ctx)
    return ctx.connect


def base_of(request: Request) -> str:
    """This server's address as the browser reaches it: the public URL, else the request's own."""
    ctx = ctx_of(request)
    return (ctx.settings.public_url or str(request.base_url)).rstrip("/")


def describe_signin(s: SignIn) -> dict[str, Any]:
    return {"endpoint": s.endpoint, "preset": s.preset, "flow": s.flow, "signed_in_at": s.signed_in_at,
            "expires_at": s.expires_at, "renewed_at": s.renewed_at, "renewable": s.renewable,
            "ended": s.ended, "ended_at": s.ended_at, "ended_why": s.ended_why}


@admin
async def get_presets(request: Request) -> Response:
    ctx = ctx_of(request)
    kept = await signin_store.client_ids(ctx.db)
    out = []
    for preset in signins_of(ctx).presets().values():
        row = preset.describe()
        row["client_id"] = kept.get(preset.id) or preset.client_id
        row["needs_client_id"] = preset.needs_client_id and not kept.get(preset.id)
        row["env"] = env_names(preset.id)
        out.append(row)
    return ok({"presets": out, "callback": base_of(request) + CALLBACK_PATH})


@admin
async def start(request: Request) -> Response:
    ctx = ctx_of(request)
    body = await body_as(request, StartIn, "sign-in")
    reply = await signins_of(ctx).start(body.preset, flow=body.flow, endpoint=body.endpoint,
                                        client_id=body.client_id, base=base_of(request))
    return ok(reply, 201)


@admin
async def get_flow(request: Request) -> Response:
    ctx = ctx_of(request)
    flow_id = (request.query_params.get("id") or "").strip()
    if not flow_id:
        raise BadRequest("name the flow: /api/connect/flow?id=<id> (its id is in the start's reply)")
    try:
        wait = min(MAX_WAIT, max(0.0, float(request.query_params.get("wait") or 0)))
    except ValueError:
        raise BadRequest("wait is a number of seconds") from None
    return ok({"flow": (await signins_of(ctx).status(flow_id, wait)).describe()})


@admin
async def cancel(request: Request) -> Response:
    ctx = ctx_of(request)
    body = await body_as(request, FlowIn, "cancel")
    return ok({"flow": (await signins_of(ctx).cancel(body.id)).describe()})


@admin
async def list_signins(request: Request) -> Response:
    ctx = ctx_of(request)
    return ok({"signins": [describe_signin(s) for s in await signin_store.all_signins(ctx.db)]})


@admin
async def sign_out(request: Request) -> Response:
    ctx = ctx_of(request)
    body = await body_as(request, SignOutIn, "sign-out")
    return ok(await signins_of(ctx).sign_out(body.endpoint))


def _page(title: str, text: str, status: int) -> HTMLResponse:
    body = (f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{html.escape(title)}</title></head>"
            f"<body style='font-family:sans-serif;max-width:40em;margin:3em auto'><h1>{html.escape(title)}</h1>"
            f"<p>{html.escape(text)}</p><p><a href='/endpoints'>Back to Endpoints</a></p></body></html>")
    return HTMLResponse(body, status_code=status, headers=PAGE_HEADERS)


async def callback(request: Request) -> Response:
    """The provider's redirect back: finish the flow, then the Endpoints page with its id (the
    flow's status says how it ended). A callback that finds no pending flow (a state this server
    never sent, a code already used) gets a page of its own saying so."""
    ctx = ctx_of(request)
    state = request.query_params.get("state") or ""
    record = await signin_store.flow_by_state(ctx.db, state) if state else None
    try:
        await signins_of(ctx).callback(str(request.url), state)
    except BenchError as e:
        if record is None or record.status != "pending":
            return _page("Sign-in not finished", e.message, e.status if e.status < 500 else 502)
    except Exception:
        log.exception("a sign-in's callback failed")
        return _page("Sign-in not finished", "an internal error; the server log has the details", 500)
    assert record is not None
    return _onwards(f"/endpoints?signin={record.id}")


def _onwards(target: str) -> HTMLResponse:
    """A page of this server that goes on to ``target`` by itself (a meta refresh), not a redirect:
    the provider's redirect began on another site, and a browser sends no ``SameSite=Strict`` login
    cookie along a redirect chain that began there, so a 303 would land on the login page. A
    navigation this page starts is same-site, and the cookie goes with it."""
    where = html.escape(target, quote=True)
    body = (f"<!doctype html><html lang=en><head><meta charset=utf-8><meta http-equiv=refresh content='0;url={where}'>"
            f"<title>Signed in</title></head><body style='font-family:sans-serif;max-width:40em;margin:3em auto'>"
            f"<p>Back to <a href='{where}'>Endpoints</a>…</p></body></html>")
    return HTMLResponse(body, headers=PAGE_HEADERS)


__all__ = ["callback", "cancel", "get_flow", "get_presets", "list_signins", "sign_out", "start"]
