"""MCP on the server's own port: the four tools (``mcp_tools.py``) answered by the engine directly,
served over streamable HTTP at ``/mcp`` and ``/v1/mcp`` (both protocol eras the SDK speaks), plus
``POST /bench/remind``, the store-backed "remind once per seat per session" set that the stdio
launcher uses too.

``/mcp`` is an ordinary route of the app's one route table, so every middleware of the app (Host,
Origin, keys) applies to it as to ``/v1``. Each app gets its own MCP server and session manager,
made and run in the app's task group from its first MCP request on (``serve_http``, started by
``app.McpStarter``: the SDK is most of the cold start); the route finds it on ``app.state``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send

from benchwarmers_mcp import __version__
from benchwarmers_mcp.access.policy import Policy
from benchwarmers_mcp.context import Access, Context
from benchwarmers_mcp.engine import collections, learning, report
from benchwarmers_mcp.engine.panel import MergeDone, PanelRun, start_panel
from benchwarmers_mcp.engine.verdicts import parse_verdict
from benchwarmers_mcp.errors import BadRequest, BenchError
from benchwarmers_mcp.inbound import access_of, context, guarded, read_json
from benchwarmers_mcp.inbound import render_error as default_error
from benchwarmers_mcp.mcp.tools import MAX_CALLS, AskArgs, Progress, ToolFailure, VerdictArgs, build_server
from benchwarmers_mcp.messages import Ask, user
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import collections as collection_store
from benchwarmers_mcp.store import reminders, verdicts

log = logging.getLogger("benchwarmers.mcp")



def refused(tool: str, error: BenchError) -> ToolFailure:
    return ToolFailure(f"Benchwarmers refused {tool} ({error.status}): {error.message}")


class EngineTools:
    """The ``mcp_tools.Backend`` of the server itself: the engine and the store, in-process."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    async def collections(self, request: Request | None) -> list[dict[str, Any]]:
        entries = await collections.entries(self.ctx.db, only=access_of(request).visible())
        evidence = await learning.load_evidence(self.ctx.db)
        for entry in entries:  # each member's rating on the collection: mean, 90% interval, status
            found = await collection_store.get(self.ctx.db, entry["name"])
            ratings = await learning.ratings_for(self.ctx.db, found.qualified, learning.review_shape(found),
                                                 found.members, evidence=evidence)
            entry["ratings"] = {a: learning.brief(r) for a, r in ratings.items()}
        return entries

    async def ask(self, args: AskArgs, request: Request | None, progress: Progress) -> tuple[str, dict[str, Any]]:
        try:
            run = await self._start(args, request)
        except BenchError as e:
            raise refused("ask", e) from None
        seats = len(run.seating.seats)
        merging = run.reply == "merged"
        await progress.seat(0, seats + 1 if merging else seats)
        async for event in run.events(keepalive=self.ctx.settings.keepalive):
            if event is None:
                await progress.tick()
            elif isinstance(event, MergeDone):
                await progress.seat(seats + 1, message="merged")
            elif merging and event.answered == seats:
                await progress.seat(seats, message=f"{seats} of {seats} seats answered; merging")
            else:
                await progress.seat(event.answered)
        await run.wait()
        return report.content(run), report.panel_bench(run)

    async def _start(self, args: AskArgs, request: Request | None) -> PanelRun:
        collection, suffix = collections.split_model(args.collection)
        reply = suffix if args.merged is None else ("merged" if args.merged else "all")
        nominees = tuple(n.strip() for n in args.with_ or () if n.strip())
        access = access_of(request)
        ask = Ask(collection=collection, messages=(user(args.prompt),), system=args.system or None, reply=reply,
                  with_=nominees, model_name=args.collection, key_name=access.key_name)
        access.check(collection)
        found = await collection_store.resolve(self.ctx.db, collection)
        return await start_panel(self.ctx, ask, found, collections.reply_mode(ask, found, can_route=False),
                                 access=access)

    async def verdict(self, args: VerdictArgs, request: Request | None) -> tuple[dict[str, Any], bool]:
        try:
            verdict = parse_verdict(args.body())
            recorded, written = await verdicts.record(self.ctx.db, verdict, access=access_of(request))
        except BenchError as e:
            raise refused("verdict", e) from None
        if written:
            await learning.after_verdict(self.ctx, recorded.call)
        return recorded.as_dict(), written

    async def remind(self, session: str, calls: list[str], request: Request | None) -> list[str]:
        return await reminders.due(self.ctx.db, session, calls, access=access_of(request))


# ---- streamable HTTP ---------------------------------------------------------------------------

def _hosts_and_origins(settings: Settings) -> tuple[list[str], list[str]]:
    """The guard's own allowed set, in the SDK's terms: exact hosts, and the server's own origins
    (``Policy.origins``: scheme and host) plus the CORS origins. One policy, checked twice."""
    policy = Policy.from_settings(settings)
    return sorted(policy.hosts), sorted(policy.origins) + sorted(policy.cors_origins)


def transport_security(settings: Settings) -> TransportSecuritySettings:
    """The SDK's own Host/Origin check, with the same allowed set as the app's (defence in depth)."""
    hosts, origins = _hosts_and_origins(settings)
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                     allowed_origins=origins)


@asynccontextmanager
async def serve_http(app: Starlette, ctx: Context) -> AsyncIterator[None]:
    """Lifespan hook: this app's MCP server and its one session manager, running while the app runs."""
    server = build_server(EngineTools(ctx), __version__)
    server.streamable_http_app(transport_security=transport_security(ctx.settings),
                               max_request_body_size=ctx.settings.max_body)
    try:
        async with server.session_manager.run():  # requests reach it only once it runs (else: its 500)
            app.state.mcp_http = StreamableHTTPASGIApp(server.session_manager)
            yield
    finally:
        app.state.mcp_http = None


def key_principal(access: Access) -> AuthenticatedUser:
    """The caller's gateway key as the SDK's principal. The session manager binds a session to the
    principal of the request that opened it and answers any other principal's request on that
    session as if the session did not exist (404 "Session not found"). The token field holds the
    key's name, never a secret."""
    return AuthenticatedUser(AccessToken(token=f"gateway-key:{access.key_name}", client_id=access.key_name,
                                         scopes=[]))


class McpEndpoint:
    """``/mcp`` and ``/v1/mcp`` (an ASGI app, so the SDK sees the raw request): hand the request to
    this app's session manager (started by the app on the first request, ``app.McpStarter``), with
    the caller's gateway key as its principal, so an MCP session belongs to the key that opened it."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            access = access_of(HTTPConnection(scope))
        except BenchError as e:
            await render_error(e)(scope, receive, send)
            return
        state = scope["app"].state
        handler = getattr(state, "mcp_http", None)
        start = getattr(state, "mcp_start", None)
        if handler is None and start is not None:  # the app starts its MCP server on first use
            await start()
            handler = getattr(state, "mcp_http", None)
        if handler is None:
            error = BenchError("the MCP server is not running (the app is starting or stopping)")
            error.status = 503
            await render_error(error)(scope, receive, send)
            return
        await handler({**scope, "user": key_principal(access)}, receive, send)


mcp_endpoint = McpEndpoint()  # POST and DELETE (a handshake-era session's end); no GET, see routes.py


def render_error(error: BenchError) -> Response:
    """A refusal on an MCP route, as a JSON-RPC error (no id: it answers no particular message)."""
    code = -32603 if error.status >= 500 else -32600
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": error.message,
                                                     "data": {"status": error.status}}}
    return JSONResponse(body, status_code=error.status, headers=error.headers)


# ---- POST /bench/remind ------------------------------------------------------------------------

@guarded(default_error)
async def post_remind(request: Request) -> Response:
    """``{"session", "calls": [...]}`` -> ``{"due": [...]}``: the answered seats with no verdict that this
    session was not reminded about yet, now recorded as reminded."""
    ctx = context(request)
    body = await read_json(request, ctx.settings.max_body)
    session, calls = body.get("session"), body.get("calls")
    if not isinstance(session, str) or not session.strip() or len(session) > reminders.MAX_SESSION:
        raise BadRequest(f"session must be a non-empty string of at most {reminders.MAX_SESSION} characters")
    if not isinstance(calls, list) or not all(isinstance(c, str) for c in calls) or len(calls) > MAX_CALLS:
        raise BadRequest(f"calls must be a list of call ids (at most {MAX_CALLS:,})")
    return JSONResponse({"due": await reminders.due(ctx.db, session.strip(), calls, access=access_of(request))})
