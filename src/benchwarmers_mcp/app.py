"""The application: one route table, one lifespan that opens everything the engine needs."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import anyio
import httpx
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from benchwarmers_mcp import __version__
from benchwarmers_mcp.access.guard import Guard
from benchwarmers_mcp.admin import api as admin_api
from benchwarmers_mcp.admin import health as admin_health
from benchwarmers_mcp.admin import limits as admin_limits
from benchwarmers_mcp.admin import models as admin_models
from benchwarmers_mcp.admin.access import install as install_security
from benchwarmers_mcp.admin.access import routes as security_routes
from benchwarmers_mcp.context import Context
from benchwarmers_mcp.errors import BenchError, NotFound
from benchwarmers_mcp.gateway import bench_routes, dialect_routes, openai_chat
from benchwarmers_mcp.gateway.shapes import render_error_for
from benchwarmers_mcp.health.clock import Clock, SystemClock
from benchwarmers_mcp.health.onboarding import Onboarding
from benchwarmers_mcp.mcp import server as mcp_server
from benchwarmers_mcp.scheduler import Scheduler
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import Database
from benchwarmers_mcp.upstream.caller import ModelCaller
from benchwarmers_mcp.upstream.keys import KeyStore
from benchwarmers_mcp.upstream.pacing import resting_now

log = logging.getLogger("benchwarmers")


async def health(request: Request) -> Response:
    return JSONResponse({"ok": True, "version": __version__})


def routes() -> list[BaseRoute]:
    """The one route table. Each face contributes its routes here."""
    table: list[BaseRoute] = [
        Route("/health", health, methods=["GET"]),
        Route("/v1/chat/completions", openai_chat.chat_completions, methods=["POST"]),
        Route("/chat/completions", openai_chat.chat_completions, methods=["POST"]),
        Route("/bench/verdict", bench_routes.post_verdict, methods=["POST"]),
        Route("/bench/pending", bench_routes.post_pending, methods=["POST"]),
        Route("/bench/record", bench_routes.get_record, methods=["GET"]),
        *dialect_routes.routes(),
        *security_routes(),
        *admin_api.routes(),
        *mcp_server.routes(),
        *admin_limits.routes(),
        *admin_health.routes(),
    ]
    return table


def make_client(settings: Settings) -> httpx.AsyncClient:
    """The one shared outbound client. It never follows a redirect, so a key never reaches another host."""
    return httpx.AsyncClient(
        follow_redirects=False,
        timeout=httpx.Timeout(settings.seat_timeout, connect=settings.upstream_connect_timeout),
        limits=httpx.Limits(max_connections=200, max_keepalive_connections=50),
    )


def start_health(app: Starlette, ctx: Context, clock: Clock) -> None:
    """The scheduler (off until switched on: it only reads its setting) and the onboarding worker
    (which resumes a queue left by a restart), in the background task group."""
    ctx.extras["clock"] = clock
    app.state.scheduler = Scheduler(ctx, clock)
    app.state.onboarding = Onboarding(ctx, clock, admin_models.register_fields)
    ctx.tg.start_soon(app.state.scheduler.run_forever)
    ctx.tg.start_soon(app.state.onboarding.run_forever)


def create_app(settings: Settings, *, clock: Clock | None = None) -> Starlette:
    """``clock``: the scheduler's and the health jobs' (tests pass one they move by hand)."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            settings.home.mkdir(parents=True, exist_ok=True)
            db = await stack.enter_async_context(Database(settings.db_path))
            http = await stack.enter_async_context(make_client(settings))
            keys = KeyStore(settings.config_dir, settings.env_keys)
            tg = await stack.enter_async_context(anyio.create_task_group())
            ctx = Context(settings, db, keys, http, ModelCaller(db, keys, http), tg)
            app.state.ctx = ctx
            install_security(ctx)
            ctx.extras["resting"] = resting_now(db)
            await stack.enter_async_context(mcp_server.serve_http(app, ctx))
            start_health(app, ctx, clock or SystemClock())
            try:
                yield
            finally:
                tg.cancel_scope.cancel()

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        if exc.status_code == 404:
            error: BenchError = NotFound(
                f"no route {request.method} {request.url.path}; routes: /v1/chat/completions, /v1/completions, "
                "/v1/responses, /v1/messages, /v1/models, /v1beta/models/<collection>:generateContent, "
                "/api/chat, /api/generate, /api/tags, /bench/verdict, /bench/pending, /bench/record, /bench/quotas, "
                "/mcp, /api/status (admin) and /health")
        else:
            error = BenchError(exc.detail or "request refused")
            error.status = exc.status_code
        response = render_error_for(request.url.path, error, request.headers)
        if exc.headers:
            response.headers.update(exc.headers)
        return response

    # the guard is outermost: every request, every route, before anything else reads it
    middleware = [Middleware(Guard, settings=settings, render_error=render_error_for)]
    return Starlette(routes=routes(), lifespan=lifespan, middleware=middleware,
                     exception_handlers={HTTPException: http_error})
