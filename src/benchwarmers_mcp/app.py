"""The application: the route table (``routes.py``) mounted behind the guard, and one lifespan that
opens everything the engine needs and starts the background workers (unfinished suite runs, the
scheduler, the onboarding queue)."""

from __future__ import annotations

import importlib
import inspect
import logging
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import anyio
import httpx
from anyio.abc import TaskStatus
from starlette.applications import Starlette
from starlette.convertors import Convertor, register_url_convertor
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route, request_response
from starlette.types import ASGIApp, Receive, Scope, Send

from benchwarmers_mcp import __version__, routes
from benchwarmers_mcp.access.guard import Guard
from benchwarmers_mcp.access.policy import startup_problems
from benchwarmers_mcp.clock import Clock, SystemClock
from benchwarmers_mcp.context import Context, RouteTuning
from benchwarmers_mcp.engine.housekeeping import Housekeeping
from benchwarmers_mcp.errors import BenchError, NotFound
from benchwarmers_mcp.gateway.shapes import render_error_for
from benchwarmers_mcp.health.onboarding import Onboarding
from benchwarmers_mcp.inbound import access_of
from benchwarmers_mcp.metrics import Metrics
from benchwarmers_mcp.scheduler import Scheduler
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import Database, liveness
from benchwarmers_mcp.store import limits as limit_store
from benchwarmers_mcp.store import replicas as replica_store
from benchwarmers_mcp.store import suite as suite_store
from benchwarmers_mcp.store.events import Feed
from benchwarmers_mcp.store.folder import private_folder
from benchwarmers_mcp.upstream.caller import ModelCaller
from benchwarmers_mcp.upstream.connect.flows import SignIns
from benchwarmers_mcp.upstream.connect.renewal import Renewer
from benchwarmers_mcp.upstream.keys import KeyStore
from benchwarmers_mcp.upstream.transport import LeanTransport

log = logging.getLogger("benchwarmers")

# The shared outbound client's pool, whichever transport is under it: connections open in all,
# and idle ones kept for reuse.
MAX_CONNECTIONS, MAX_KEEPALIVE = 200, 50


async def health(request: Request) -> Response:
    """200 ``{"ok": true}`` while this server can serve; 503 with the reason while its store cannot
    be reached or written (closed, unreachable, a dropped connection, a full disk, writes failing:
    ``store/liveness.py``), so a load balancer sends it nothing until the store works again."""
    ctx: Context | None = getattr(request.app.state, "ctx", None)  # None: mounted with no lifespan, no store
    problem = None if ctx is None else await liveness.problem(ctx.db, ctx.replica)
    if problem:
        return JSONResponse({"ok": False, "version": __version__, "store": problem[:300]}, status_code=503)
    return JSONResponse({"ok": True, "version": __version__})


class Endpoint:
    """One table entry's handler, imported on the route's first request. A gateway or admin route
    answers only a request the guard let through with the caller's Access: without the guard in
    front, nothing but the open routes answers (closed by default)."""

    def __init__(self, entry: routes.Entry) -> None:
        self.entry = entry
        self._app: ASGIApp | None = None

    def load(self) -> ASGIApp:
        """The handler as an ASGI app (a request handler function is wrapped as Starlette does)."""
        if self._app is None:
            module, _, name = self.entry.handler.partition(":")
            target = getattr(importlib.import_module(module), name)
            self._app = request_response(target) if inspect.isfunction(target) else target
        return self._app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.entry.access != "open":
            try:
                access_of(HTTPConnection(scope))
            except BenchError as e:
                log.error("%s %s reached its route without the guard's access check", scope["method"],
                          scope["path"])
                await render_error_for(scope["path"], e, Headers(scope=scope))(scope, receive, send)
                return
        await self.load()(scope, receive, send)


class Only:
    """A server of part of the table (``benchwarmers gateway``): a path none of its routes matches is
    a 404 in the path's shape, before the guard asks for any credential, so a gateway-only server
    answers no admin route and no page, whoever asks."""

    def __init__(self, app: ASGIApp, table: tuple[routes.Entry, ...]) -> None:
        self.app, self.table = app, table

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not routes.serves(self.table, scope["path"]):
            error = NotFound(f"no route {scope['method']} {routes.normal_path(scope['path'])[:100]} on this"
                             f" gateway-only server; routes: {routes.listing(self.table)}")
            await render_error_for(scope["path"], error, Headers(scope=scope))(scope, receive, send)
            return
        await self.app(scope, receive, send)


def convertor(pattern: str) -> Convertor[str]:
    """A parameter kind the table names (``routes.CONVERTORS``), so Starlette matches what it matches."""

    class Segment(Convertor[str]):
        def convert(self, value: str) -> str:
            return value

        def to_string(self, value: str) -> str:
            return value

    Segment.regex = pattern
    return Segment()


def mount(table: tuple[routes.Entry, ...] = routes.TABLE) -> list[BaseRoute]:
    """The table as Starlette routes, in its order: the only routes the app has."""
    for kind, pattern in routes.CONVERTORS.items():
        register_url_convertor(kind, convertor(pattern))
    return [Route(e.path, Endpoint(e), methods=list(e.methods), name=e.handler) for e in table]


async def _run_mcp(app: Starlette, ctx: Context, *, task_status: TaskStatus[None]) -> None:
    """The MCP server for the app's life. A failure before it serves goes to the request that
    started it; one after is logged and ends the MCP server alone, never the app's task group."""
    from benchwarmers_mcp.mcp import server as mcp_server  # the SDK is most of the cold start

    serving = False
    try:
        async with mcp_server.serve_http(app, ctx):
            task_status.started()
            serving = True
            await anyio.sleep_forever()
    except Exception:
        if not serving:
            raise
        log.exception("the MCP server failed; the rest of the server carries on")


class McpStarter:
    """Starts this app's MCP server and session manager in the app's task group, once, when the
    first MCP request needs it (``mcp.server.McpEndpoint`` awaits it); the app's end stops it."""

    def __init__(self, app: Starlette, ctx: Context) -> None:
        self.app, self.ctx = app, ctx
        self._lock = anyio.Lock()
        self._started = False

    async def __call__(self) -> None:
        async with self._lock:
            if not self._started:
                await self.ctx.tg.start(_run_mcp, self.app, self.ctx)
                self._started = True


def closing(app: Starlette) -> None:
    """A stopping server's first step, before it waits for open requests: the dashboard's event
    streams end now (a browser reconnects to whatever serves next), so no idle tab holds it."""
    ctx: Context | None = getattr(app.state, "ctx", None)
    if ctx is not None and ctx.events is not None:
        ctx.events.close()


def outbound_transport(settings: Settings,
                       transport: httpx.AsyncBaseTransport | None = None) -> httpx.AsyncBaseTransport | None:
    """What the shared client sends through: ``transport`` (the test seam: tests route upstream
    hosts to in-process fakes through it), else ``upstream.transport.LeanTransport`` (httpcore costs
    most of a call's CPU), except when the environment names a proxy: a client given a transport
    ignores HTTP(S)_PROXY and ALL_PROXY, so then httpx's own transport (and its proxy mounts) stays
    (None)."""
    if transport is None and not settings.upstream_proxy:
        transport = LeanTransport(max_connections=MAX_CONNECTIONS, max_keepalive=MAX_KEEPALIVE)
    return transport


def make_client(settings: Settings, transport: httpx.AsyncBaseTransport | None = None) -> httpx.AsyncClient:
    """The one shared outbound client, over ``outbound_transport(settings, transport)``. It never
    follows a redirect, so a key never reaches another host."""
    return httpx.AsyncClient(
        transport=outbound_transport(settings, transport),
        follow_redirects=False,
        timeout=httpx.Timeout(settings.seat_timeout, connect=settings.upstream_connect_timeout),
        limits=httpx.Limits(max_connections=MAX_CONNECTIONS, max_keepalive_connections=MAX_KEEPALIVE),
    )


def start_workers(ctx: Context) -> None:
    """The scheduler (off until switched on: each tick only reads its setting), the onboarding
    worker (which resumes a queue a restart left) and sign-in renewal, in the background task group,
    as typed fields of the context (``ctx.scheduler``, ``ctx.onboarding``, ``ctx.connect``) for the
    admin API to reach."""
    scheduler = Scheduler(ctx, tick=ctx.settings.scheduler_tick)
    onboarding = Onboarding(ctx)
    ctx.scheduler, ctx.onboarding = scheduler, onboarding
    ctx.spawn(scheduler.run_forever, name="scheduler")
    ctx.spawn(onboarding.run_forever, name="onboarding worker")
    ctx.spawn(Housekeeping(ctx).run_forever, name="housekeeping")  # the retention: at start, then every few hours
    ctx.connect = SignIns(ctx)  # sign-in flows (their secrets in this process), and renewing their tokens
    ctx.spawn(Renewer(ctx).run_forever, name="token renewer")


def create_app(settings: Settings, *, route_tuning: RouteTuning | None = None,
               upstream_transport: httpx.AsyncBaseTransport | None = None, clock: Clock | None = None,
               table: tuple[routes.Entry, ...] = routes.TABLE) -> Starlette:
    """The app. ``table``: the routes it serves (``routes.GATEWAY_TABLE`` for a gateway-only
    server; any other path is a 404). Test seams: ``route_tuning`` replaces route mode's timings
    from Settings (tests fix its odds); ``upstream_transport`` replaces the network for every
    upstream call; ``clock`` the wall clock of the health jobs, the scheduler and the onboarding
    queue (a test moves it by hand)."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        problems = startup_problems(settings)
        if problems:
            raise RuntimeError("refusing to start: " + "; ".join(problems))
        async with AsyncExitStack() as stack:
            private_folder(settings.home)  # 0700, its files 0600 (store/folder.py)
            db = await stack.enter_async_context(Database(settings.store_target))
            transport = outbound_transport(settings, upstream_transport)  # None: httpx's, for proxies
            http = await stack.enter_async_context(make_client(settings, transport))
            keys = KeyStore(settings.config_dir, settings.env_keys)
            feed = await stack.enter_async_context(Feed(db))  # closes after the task group
            tg = await stack.enter_async_context(anyio.create_task_group())
            caller = ModelCaller(db, keys, http, transport=transport, metrics=metrics,
                                 calls_by=settings.client)  # calls go to it directly
            ctx = Context(settings, db, keys, http, caller, tg, route_tuning=route_tuning,
                          events=feed, clock=clock or SystemClock(), metrics=metrics)
            metrics.watch_store(db.error_count)
            app.state.ctx = ctx
            ctx.spawn(feed.run, name="event feed")
            ctx.replica = replica_store.new_id()
            metrics.identify(ctx.replica)
            await tg.start(replica_store.keep_present, db, ctx.replica)
            await limit_store.book_orphans(db, time.time())  # calls a crash left in flight: into the ledger
            app.state.mcp_http = None
            app.state.mcp_start = McpStarter(app, ctx)  # the MCP SDK loads on the first /mcp request
            if await suite_store.unfinished_runs(db):  # unfinished suite runs continue where they stopped
                from benchwarmers_mcp.suite import runner as suite_runner  # the suite loads only when one did

                await suite_runner.resume(ctx)
            start_workers(ctx)
            try:
                yield
            finally:
                feed.close()
                tg.cancel_scope.cancel()

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        if exc.status_code == 404:
            error: BenchError = NotFound(f"no route {request.method} {request.url.path}; routes: {routes.listing()}")
        else:
            error = BenchError(exc.detail or "request refused")
            error.status = exc.status_code
        response = render_error_for(request.url.path, error, request.headers)
        if exc.headers:
            response.headers.update(exc.headers)
        return response

    metrics = Metrics()  # this app's, so this process's: the guard counts requests, the rest the context's
    # the guard is outermost: every request, every route, before anything else reads it
    middleware = [Middleware(Guard, settings=settings, render_error=render_error_for, metrics=metrics)]
    if table is not routes.TABLE:
        middleware.insert(0, Middleware(Only, table=table))
    return Starlette(routes=mount(table), lifespan=lifespan, middleware=middleware,
                     exception_handlers={HTTPException: http_error})
