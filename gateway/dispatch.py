"""The one flow every dialect shares: read the body, parse it into an Ask, resolve the
collection and its reply mode, then answer as a panel or a route turn, streamed or whole.
Errors are rendered once, by the dialect's own ``render_error``, never as a bare 500.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from benchwarmers_mcp.access.guard import access_of
from benchwarmers_mcp.context import Context
from benchwarmers_mcp.engine.panel import PanelRun, start_panel
from benchwarmers_mcp.errors import BenchError, Unsupported
from benchwarmers_mcp.gateway.body import read_json
from benchwarmers_mcp.messages import Ask
from benchwarmers_mcp.store import collections as collection_store
from benchwarmers_mcp.store.collections import Collection

log = logging.getLogger("benchwarmers.gateway")

Parse = Callable[[dict[str, Any], str], Ask]
RespondPanel = Callable[[PanelRun, Ask, dict[str, Any], Context, float], Response]
RespondRoute = Callable[[Context, Ask, dict[str, Any], Collection, Request], Awaitable[Response]]
RenderError = Callable[[BenchError], Response]


@dataclass(frozen=True)
class Dialect:
    name: str
    parse: Parse
    respond_panel: RespondPanel
    render_error: RenderError
    respond_route: RespondRoute | None = None


def context(request: Request) -> Context:
    return request.app.state.ctx


def key_name(request: Request) -> str:
    """The caller's key name, as the guard found it (a refusal when it found nothing)."""
    return access_of(request).key_name


def guarded(render_error: RenderError) -> Callable:
    """Wrap a handler so every failure leaves in the dialect's own error shape."""

    def wrap(handler: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
        async def guarded_handler(request: Request) -> Response:
            try:
                return await handler(request)
            except BenchError as e:
                return render_error(e)
            except Exception:
                log.exception("unexpected failure on %s %s", request.method, request.url.path)
                return render_error(BenchError("internal error in the gateway; the server log has the details"))

        guarded_handler.__name__ = handler.__name__
        return guarded_handler

    return wrap


async def resolve_for(request: Request, name: str) -> Collection:
    """A collection the caller may use, by name (403 out of the key's scope, 404 unknown)."""
    access_of(request).check(name)
    return await collection_store.resolve(context(request).db, name)


async def handle_ask(request: Request, dialect: Dialect, body: dict[str, Any] | None = None) -> Response:
    ctx = context(request)
    started = time.perf_counter()
    if body is None:
        body = await read_json(request, ctx.settings.max_body)
    ask = dialect.parse(body, key_name(request))
    collection = await resolve_for(request, ask.collection)
    reply = ask.reply or collection.reply or "all"
    if reply == "route":
        if dialect.respond_route is None:
            raise Unsupported(f"route mode is not available in the {dialect.name} format yet")
        return await dialect.respond_route(ctx, ask, body, collection, request)
    run = await start_panel(ctx, ask, collection, access=access_of(request))
    if ask.stream:
        return dialect.respond_panel(run, ask, body, ctx, (time.perf_counter() - started) * 1000)
    await run.wait()
    wall = time.perf_counter() - started
    slowest = max((s.seconds for s in run.seats_done), default=0.0)
    if run.merge and run.merge.record:
        slowest += run.merge.record.seconds
    return dialect.respond_panel(run, ask, body, ctx, max(0.0, wall - slowest) * 1000)
