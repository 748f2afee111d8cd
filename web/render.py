"""Pages rendered on the server with Jinja2 (autoescaped: every value is escaped unless a
template says otherwise, and none does), with the filters every page shares. Times are written by
``clock.py``'s helpers, the ones the admin API and the CLI use: ``when`` (one date format), ``ago``
(one relative time, past or future: ``3 min ago``, ``in 5 min``), ``day`` and ``iso``."""

from __future__ import annotations

import gzip
import re
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from benchwarmers_mcp import clock
from benchwarmers_mcp.web.assets import Assets
from benchwarmers_mcp.web.security import HEADERS

TEMPLATES = Path(__file__).parent / "templates"
GZIP_FROM = 1400  # bytes: smaller pages go as they are


def iso(value: Any) -> str:
    """A ``<time datetime>``: ``clock.iso``, or nothing for no time (epoch seconds or ISO text)."""
    return clock.iso(clock.moment_of(value)) or ""


def when(value: Any, never: str = "never") -> str:
    """``clock.when`` of epoch seconds or ISO text (what the admin API's overviews hold)."""
    return clock.when(clock.moment_of(value), never)


def ago(value: Any, now: float | None = None, never: str = "never") -> str:
    """``clock.ago`` of epoch seconds or ISO text: ``3 min ago``, ``in 5 min``."""
    return clock.ago(clock.moment_of(value), now, never)


def num(value: float | int | None) -> str:
    if value is None:
        return "—"
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}"


def tokens(value: int | None) -> str:
    """A context or output size: 128000 -> 128k."""
    if not value:
        return "—"
    for decimal, binary, unit in ((1_000_000, 1 << 20, "M"), (1000, 1 << 10, "k")):
        if value >= decimal and value % decimal == 0:  # 128000 -> 128k
            return f"{value // decimal}{unit}"
        if value >= binary and value % binary == 0:  # 131072 -> 128k, 16384 -> 16k
            return f"{value // binary}{unit}"
    if value >= 1000:  # 1500 -> 1.5k
        return f"{round(value / 1_000_000, 1):g}M" if value >= 1_000_000 else f"{round(value / 1000, 1):g}k"
    return str(value)


def weight(value: float | None) -> str:
    """How many verdicts a rating weighs (aged ones count less): 10 when whole, else 9.6."""
    value = float(value or 0)
    return f"{round(value)}" if abs(value - round(value)) < 0.05 else f"{value:.1f}"


def share(useful: int, judged: int) -> str:
    return f"{100 * useful / judged:.0f}%" if judged else "—"


def dom_id(value: str) -> str:
    """A call id (``p-1.member1``, ``c-2.t3``) as a piece of an element id."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", value)


def yesno(value: bool | None) -> str:
    return "unknown" if value is None else "yes" if value else "no"


def environment(assets: Assets) -> Environment:
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html"]),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, auto_reload=False)
    env.globals["asset"] = assets.url
    env.filters.update(when=when, day=clock.day, iso=iso, ago=ago, num=num, tokens=tokens, yesno=yesno,
                       dom_id=dom_id)
    env.globals["share"] = share
    return env


def html(request: Request, body: str, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """An HTML page with the dashboard's headers, gzipped when the browser takes it and it is worth it."""
    out = {**HEADERS, "Cache-Control": "no-store", "Vary": "Accept-Encoding", **(headers or {})}
    data = body.encode()
    if len(data) >= GZIP_FROM and "gzip" in (request.headers.get("accept-encoding") or ""):
        data, out["Content-Encoding"] = gzip.compress(data, 6), "gzip"
    return HTMLResponse(data, status_code=status, headers=out)


def render(env: Environment, request: Request, template: str, context: dict[str, Any], status: int = 200) -> Response:
    return html(request, env.get_template(template).render(context), status)
