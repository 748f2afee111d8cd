"""The page registry: every module in ``web/pages/`` that defines ``PAGE`` is a page.

A page is one small module and one template. The module says where the page lives, its title
(the sidebar link's text), its sidebar group and place, the template, the event kinds that
refresh it, any extra static files, and ``load(view)``, which returns what the template needs.
Nothing else is registered anywhere: a new module with a ``PAGE`` shows up in the sidebar, and
the route table's one page entry (``routes.PAGES``, ``/{page:page}``: the root or any path whose
first segment no other route begins with) already answers its path.

A path may have parameters, a whole segment each (``/panels/{id}``): the page answers every path
of that shape and its ``load`` reads them with ``view.param("id")``. Such a page is reached by
links, not from the sidebar. A page may show a ``badge`` beside its sidebar link (a count, as
"To judge" does), loaded on every page.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request

from benchwarmers_mcp.context import Context
from benchwarmers_mcp.routes import is_page

GROUPS = ("Bench", "Gateway", "Observe", "Control")
EVENT_KINDS = frozenset({"seat", "panel", "verdict", "change", "alert", "route", "probe", "onboarding", "scheduler",
                         "suggestion"})


@dataclass(frozen=True)
class View:
    """What a page's ``load`` is given: the engine's context, the request and the time."""

    ctx: Context
    request: Request
    now: float = field(default_factory=time.time)
    params: dict[str, str] = field(default_factory=dict)  # the path's parameters (``/panels/{id}``)

    def arg(self, name: str, default: str = "") -> str:
        return (self.request.query_params.get(name) or default).strip()

    def param(self, name: str) -> str:
        return self.params[name]


Loader = Callable[[View], Awaitable[dict[str, Any]]]
Badge = Callable[[View], Awaitable[int]]
_SEGMENT = re.compile(r"\{([a-z_]+)\}")


@dataclass(frozen=True)
class Page:
    path: str  # where it is served: "/" or "/ask"
    title: str  # the sidebar link, the heading and the <title>
    group: str  # the sidebar group (GROUPS)
    order: int  # its place in the group
    template: str  # in web/templates/
    load: Loader
    live: frozenset[str] = frozenset()  # event kinds that refresh its live regions
    scripts: tuple[str, ...] = ()  # static files beyond app.js (and app.css), e.g. "charts.js"
    styles: tuple[str, ...] = ()
    badge: Badge | None = None  # a count beside its sidebar link (none when 0)

    def __post_init__(self) -> None:
        if self.group not in GROUPS:
            raise ValueError(f"page {self.title!r}: group is one of {', '.join(GROUPS)}")
        segments = self.path.split("/")[1:]
        first_fixed = bool(segments) and _SEGMENT.fullmatch(segments[0]) is None
        shaped = all(s and ("{" not in s or _SEGMENT.fullmatch(s)) for s in segments)
        if self.path != "/" and (not self.path.startswith("/") or not first_fixed or not shaped
                                 or not is_page(self.path)):
            raise ValueError(f"page {self.title!r}: its path is / or segments (/ask, /panels/{{id}}: a parameter "
                             "is a whole segment) whose first no other route begins with: not /api, /static, "
                             "/login, /health, nor a gateway route (/v1, /bench, /models, /mcp ...)")
        names = _SEGMENT.findall(self.path)
        if len(set(names)) != len(names):
            raise ValueError(f"page {self.title!r}: a path parameter named twice")
        unknown = self.live - EVENT_KINDS
        if unknown:
            raise ValueError(f"page {self.title!r}: unknown event kinds {sorted(unknown)}")

    @property
    def shape(self) -> str:
        """The path with its parameters unnamed (``/panels/{}``): two pages of one shape clash."""
        return _SEGMENT.sub("{}", self.path)

    @property
    def in_sidebar(self) -> bool:
        """A page with parameters is one of many (a panel's), reached by its links."""
        return "{" not in self.path

    def match(self, path: str) -> dict[str, str] | None:
        """The path's parameters when ``path`` is one of this page's (a normal path), else None."""
        mine, theirs = self.path.split("/"), path.split("/")
        if len(mine) != len(theirs):
            return None
        params: dict[str, str] = {}
        for want, got in zip(mine, theirs, strict=True):
            name = _SEGMENT.fullmatch(want)
            if name is not None:
                params[name.group(1)] = got
            elif want != got:
                return None
        return params


def discover(package: str = "benchwarmers_mcp.web.pages") -> list[Page]:
    """Every page, in sidebar order (group, then order). Two pages on one path are refused."""
    found: list[Page] = []
    module = importlib.import_module(package)
    for info in pkgutil.iter_modules(module.__path__):
        page = getattr(importlib.import_module(f"{package}.{info.name}"), "PAGE", None)
        if isinstance(page, Page):
            found.append(page)
    paths = [p.shape for p in found]
    twice = sorted({p for p in paths if paths.count(p) > 1})
    if twice:
        raise ValueError(f"two pages on one path: {', '.join(twice)}")
    return sorted(found, key=lambda p: (GROUPS.index(p.group), p.order, p.title))


def sidebar(pages: list[Page]) -> list[tuple[str, list[Page]]]:
    shown = [p for p in pages if p.in_sidebar]
    return [(g, [p for p in shown if p.group == g]) for g in GROUPS if any(p.group == g for p in shown)]
