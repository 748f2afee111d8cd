"""The dashboard's routes: one GET per page, the login page and the static files; and the
refusal renderer that sends a browser without a login to the login page (303) while ``/api/*``
still answers 401 in JSON."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote

from jinja2 import Environment
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from benchwarmers_mcp import __version__
from benchwarmers_mcp.access import admin_token as auth
from benchwarmers_mcp.access.policy import normal_path, route_class
from benchwarmers_mcp.context import Context
from benchwarmers_mcp.errors import BenchError, Unauthorized
from benchwarmers_mcp.web.assets import Assets
from benchwarmers_mcp.web.registry import Page, View, discover, sidebar
from benchwarmers_mcp.web.render import environment, render
from benchwarmers_mcp.web.security import HEADERS

log = logging.getLogger("benchwarmers.web")

Handler = Callable[[Request], Awaitable[Response]]
RenderError = Callable[[str, BenchError, Headers], Response]


def ctx_of(request: Request) -> Context:
    ctx: Context = request.app.state.ctx
    return ctx


async def events_head(ctx: Context) -> int:
    feed = ctx.extras.get("events")
    return await feed.head() if feed is not None else 0


def _shared(ctx: Context, pages: list[Page], current: Page | None) -> dict[str, Any]:
    return {"pages": pages, "sidebar": sidebar(pages), "current": current, "version": __version__,
            "login": bool(ctx.settings.admin_token)}


def page_handler(page: Page, pages: list[Page], env: Environment) -> Handler:
    async def handler(request: Request) -> Response:
        ctx = ctx_of(request)
        view = View(ctx, request)
        shared = {**_shared(ctx, pages, page), "now": view.now}
        try:
            after = await events_head(ctx)  # before the load: nothing between the two is missed
            data = await page.load(view)
        except BenchError as e:
            return render(env, request, "error.html", {**shared, "message": e.message}, e.status)
        except Exception:
            log.exception("the %s page failed", page.title)
            return render(env, request, "error.html",
                          {**shared, "message": "internal error; the server log has the details"}, 500)
        return render(env, request, page.template, {**shared, **data, "page": page, "events_after": after})

    handler.__name__ = f"page_{page.template.removesuffix('.html')}"
    return handler


def safe_next(target: str) -> str:
    """Where to go after logging in: a path on this server, never another host."""
    if not target.startswith("/") or target.startswith("//") or "\\" in target or not target.isprintable():
        return "/"
    return target


def login_handler(pages: list[Page], env: Environment) -> Handler:
    async def login_page(request: Request) -> Response:
        ctx = ctx_of(request)
        token = ctx.settings.admin_token
        cookie = request.cookies.get(auth.COOKIE)
        signed_in = bool(token and cookie and auth.session_valid(cookie, token, time.time()))
        return render(env, request, "login.html", {
            **_shared(ctx, pages, None), "needed": bool(token), "signed_in": signed_in,
            "next": safe_next(request.query_params.get("next") or "/"), "python": sys.version.split()[0]})

    return login_page


def static_handler(assets: Assets) -> Handler:
    async def static(request: Request) -> Response:
        return assets.response(request, request.path_params["name"])

    return static


def routes() -> list[BaseRoute]:
    """The dashboard's routes, for the application's route table."""
    pages = discover()
    assets = Assets()
    env = environment(assets)
    for name in {p.template for p in pages} | {"login.html", "error.html"}:
        env.get_template(name)  # compiled now, not on the first visit
    table: list[BaseRoute] = [Route(p.path, page_handler(p, pages, env), methods=["GET"]) for p in pages]
    table += [Route("/login", login_handler(pages, env), methods=["GET"]),
              Route("/static/{name:path}", static_handler(assets), methods=["GET"])]
    return table


def is_page(path: str) -> bool:
    """A dashboard page (not the admin API, not a gateway route)."""
    p = normal_path(path)
    return route_class(p) == "admin" and p != "/api" and not p.startswith("/api/")


def refusals(render_error: RenderError) -> RenderError:
    """The guard's renderer with one change: a page refused for want of a login redirects (303)
    to the login page, which brings the visitor back after it."""

    def render_refusal(path: str, error: BenchError, headers: Headers) -> Response:
        if isinstance(error, Unauthorized) and is_page(path):
            return RedirectResponse(f"/login?next={quote(normal_path(path), safe='/')}", status_code=303,
                                    headers={**HEADERS, "Cache-Control": "no-store"})
        return render_error(path, error, headers)

    return render_refusal
