"""The dashboard's handlers, as the route table names them: ``page`` answers every page of the
registry (the table's one ``/{page:page}`` entry), ``login_page`` the login form (``GET /login``),
``static`` the files in ``static/`` (``GET /static/{rest:path}``).

The pages, their compiled templates and the static files are gathered once per process, on the
first request that needs them (``site()``): nothing of the dashboard loads before a browser asks.
"""

from __future__ import annotations

import logging
import re
import sys
import time
from dataclasses import dataclass
from functools import cache
from typing import Any
from urllib.parse import unquote, urlsplit

from jinja2 import Environment
from starlette.requests import Request
from starlette.responses import Response

from benchwarmers_mcp import __version__
from benchwarmers_mcp.access import admin_token as auth
from benchwarmers_mcp.context import Context
from benchwarmers_mcp.errors import BenchError, NotFound
from benchwarmers_mcp.inbound import context
from benchwarmers_mcp.routes import normal_path
from benchwarmers_mcp.web import action_needed, onboarding_chip
from benchwarmers_mcp.web.assets import Assets
from benchwarmers_mcp.web.registry import Page, View, discover, sidebar
from benchwarmers_mcp.web.render import environment, render

log = logging.getLogger("benchwarmers.web")


@dataclass(frozen=True)
class Site:
    """Every page (in sidebar order) by path, the templates' environment and the static files."""

    pages: tuple[Page, ...]
    env: Environment
    assets: Assets

    def find(self, path: str) -> Page | None:
        p = normal_path(path)
        return next((page for page in self.pages if page.path == p), None)


@cache
def site() -> Site:
    pages = tuple(discover())
    assets = Assets()
    env = environment(assets)
    for name in {p.template for p in pages} | {"login.html", "error.html"}:
        env.get_template(name)  # compiled once, now: a broken template fails the first visit, not a later one
    return Site(pages, env, assets)


async def events_head(ctx: Context) -> int:
    """The newest event's id: a page loaded now listens from there."""
    return await ctx.events.head() if ctx.events is not None else 0


def _shared(ctx: Context, s: Site, current: Page | None) -> dict[str, Any]:
    return {"pages": s.pages, "sidebar": sidebar(list(s.pages)), "current": current, "version": __version__,
            "login": bool(ctx.settings.admin_token)}


def _error(request: Request, s: Site, shared: dict[str, Any], error: BenchError) -> Response:
    return render(s.env, request, "error.html", {**shared, "message": error.message}, error.status)


async def page(request: Request) -> Response:
    """One page of the registry: its ``load``, then its template; a 404 page for a path none has. An
    error in either is that page's error page (``error.html`` in the layout, with the error's status)."""
    ctx, s = context(request), site()
    view = View(ctx, request)
    current = s.find(request.url.path)
    shared = {**_shared(ctx, s, current), "now": view.now}
    if current is None:
        return _error(request, s, shared, NotFound(f"no page at {normal_path(request.url.path)[:100]}"))
    try:  # the load and the render alike: whatever fails is shown inside the page, never a bare 500
        after = await events_head(ctx)  # before the load: nothing between the two is missed
        data = await current.load(view)
        return render(s.env, request, current.template, {**shared, **data, **await _around(view, current),
                                                          "page": current, "events_after": after})
    except BenchError as e:
        return _error(request, s, shared, e)
    except Exception:
        log.exception("the %s page failed", current.title)
        return _error(request, s, shared, BenchError("internal error; the server log has the details"))


async def _around(view: View, current: Page) -> dict[str, Any]:
    """What every page shows around its own content: "Action needed" and the onboarding chip, and
    the event kinds that keep them live (added to the page's own)."""
    try:
        chip = await onboarding_chip.load(view)
    except Exception:
        log.exception("the onboarding chip failed")
        chip = onboarding_chip.Chip()
    return {"action_needed": await action_needed.load(view), "onboarding": chip,
            "live_kinds": sorted(current.live | action_needed.live_kinds() | onboarding_chip.LIVE)}


# A path on this server with an optional query, in the characters a URL holds as they are: it
# begins with one "/" (never "//" or "/\\", which a browser reads as another host), and holds no
# space, control character, backslash, fragment or non-ASCII (the login form's next step is one
# token: a space would start another), and a "%" only as an escape.
SAME_ORIGIN_PATH = re.compile(r"/(?![/\\])(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/?]|%[0-9A-Fa-f]{2}){0,2000}")


def safe_next(target: str) -> str:
    """Where to go after logging in: a path on this server (``SAME_ORIGIN_PATH``), else ``/``. Its
    path's escapes decoded must not spell another host, a backslash, a space or a control character
    either (``/%2F%2Fevil``, ``/%5Cevil``, ``/%09/evil``): a query's may (``?find=a%20b``)."""
    if not SAME_ORIGIN_PATH.fullmatch(target):
        return "/"
    path = unquote(target.split("?", 1)[0])
    if path.startswith(("//", "/\\")) or "\\" in path or not path.isprintable() or any(c.isspace() for c in path):
        return "/"
    parts = urlsplit(target)
    return target if not parts.scheme and not parts.netloc else "/"


async def login_page(request: Request) -> Response:
    ctx, s = context(request), site()
    token = ctx.settings.admin_token
    cookie = request.cookies.get(auth.COOKIE)
    signed_in = bool(token and cookie and auth.session_valid(cookie, token, time.time()))
    return render(s.env, request, "login.html", {
        **_shared(ctx, s, None), "needed": bool(token), "signed_in": signed_in,
        "next": safe_next(request.query_params.get("next") or "/"), "python": sys.version.split()[0]})


async def static(request: Request) -> Response:
    return site().assets.response(request, request.path_params["rest"])
