"""The ``page`` shape's errors (``routes.RENDERERS``): what the guard or the router says to a
dashboard page.

A page refused for want of a login redirects (303) to ``/login``, which brings the visitor back to
the page after it. Every other refusal (a foreign Host, a write from another origin, a method the
page does not take) is the default JSON error body with the dashboard's headers: nothing a
browser renders as a page of its own.
"""

from __future__ import annotations

from urllib.parse import quote

from starlette.responses import RedirectResponse, Response

from benchwarmers_mcp.errors import BenchError, Unauthorized
from benchwarmers_mcp.inbound import render_error as default_error
from benchwarmers_mcp.routes import normal_path
from benchwarmers_mcp.web.security import HEADERS


def render_error(error: BenchError) -> Response:
    response = default_error(error)
    response.headers.update(HEADERS)
    return response


def render_error_at(path: str, error: BenchError) -> Response:
    if isinstance(error, Unauthorized):
        return RedirectResponse(f"/login?next={quote(normal_path(path), safe='/')}", status_code=303,
                                headers={**HEADERS, "Cache-Control": "no-store"})
    return render_error(error)
