""""Action needed", above every page: a list of sources, each a small function that returns the
items of one kind (open alerts; models retired automatically this week), each item with its
buttons. A button is a form that posts to the admin route that takes the action (the same route
the CLI and ``GET /api/alerts`` name), so it is checked like every other dashboard form.

A new kind of item joins with one function::

    @source("suggestions", live={"verdict"})
    async def suggestions(view: View) -> list[Item]:
        return [Item("suggestion", s.subject, s.text, buttons=(Button("Accept", "/api/...", {...}),))
                for s in await ...]

``live`` names the event kinds that change what the source shows: every page listens to them,
so the banner follows whichever process raised, refreshed or cleared an item. A source that fails
is logged and left out; the page is still drawn.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from benchwarmers_mcp.health import alerts as health_alerts
from benchwarmers_mcp.store import alerts as alert_store
from benchwarmers_mcp.store import ratings as rating_store
from benchwarmers_mcp.store.ratings import SuggestionRow
from benchwarmers_mcp.web.registry import EVENT_KINDS, View
from benchwarmers_mcp.web.render import weight

log = logging.getLogger("benchwarmers.web")

TONES = {"retiring": "err", "retired": "", "connection_held": "err", "registration": "warn", "went_paid": "warn",
         "auth": "err", "billing": "err", "model_gone": "err"}
LABELS = {"connection_held": "connection held", "went_paid": "went paid", "model_gone": "may be gone",
          "registration": "not listed", "auth": "key refused", "billing": "billing"}
CONFIRM = {"Retire": "Retire {subject}? It leaves its collections; Restore puts it back.",
           "Retire all": "Retire every model on {subject}?"}
# an action whose answer is what a page shows (it reads, though by POST: it calls the endpoint): a link there
PAGE_FOR = {"/api/candidates": "/registered"}


@dataclass(frozen=True)
class Button:
    """One action: a form posting ``body`` to ``path`` (an admin route); ``asks`` are fields the
    user fills in (a new key); ``confirm`` is asked first. ``href``: a link instead of a form."""

    label: str
    path: str = ""
    body: dict[str, Any] = field(default_factory=dict)
    asks: tuple[str, ...] = ()
    confirm: str = ""
    href: str = ""


@dataclass(frozen=True)
class Item:
    kind: str  # the chip's text
    subject: str
    message: str
    at: float | None = None  # when it was raised
    tone: str = "warn"
    buttons: tuple[Button, ...] = ()


@dataclass(frozen=True)
class Source:
    name: str
    heading: str
    live: frozenset[str]
    load: Callable[[View], Awaitable[list[Item]]]


SOURCES: list[Source] = []


def source(name: str, heading: str = "", *, live: set[str] | frozenset[str]) -> Callable[
        [Callable[[View], Awaitable[list[Item]]]], Callable[[View], Awaitable[list[Item]]]]:
    """Add a function to "Action needed" (in this order). ``heading``: its own sub-heading, if any."""
    unknown = set(live) - EVENT_KINDS
    if unknown:
        raise ValueError(f"source {name!r}: unknown event kinds {sorted(unknown)}")

    def add(fn: Callable[[View], Awaitable[list[Item]]]) -> Callable[[View], Awaitable[list[Item]]]:
        SOURCES.append(Source(name, heading, frozenset(live), fn))
        return fn
    return add


def live_kinds() -> frozenset[str]:
    return frozenset().union(*(s.live for s in SOURCES))


def button_of(action: dict[str, Any], subject: str) -> Button | None:
    """An action as ``health.alerts.actions`` gives it, as a button (a link for one a page shows)."""
    page = PAGE_FOR.get(str(action["path"]).split("?", 1)[0])
    if page is not None:
        return Button(action["label"], href=page)
    if action.get("method", "POST") != "POST":
        return None
    return Button(action["label"], action["path"], dict(action.get("body") or {}), tuple(action.get("asks") or ()),
                  CONFIRM.get(action["label"], "").format(subject=subject))


def _buttons(actions: list[dict[str, Any]], subject: str) -> tuple[Button, ...]:
    return tuple(b for b in (button_of(a, subject) for a in actions) if b is not None)


@source("alerts", live={"alert"})
async def open_alerts(view: View) -> list[Item]:
    """Open alerts the user has not dismissed, oldest first; a retired one is under "retired
    automatically this week" while it is this week's."""
    recent = {r["alias"] for r in await health_alerts.retired_this_week(view.ctx.db, view.ctx.clock.now())}
    out = []
    for a in await alert_store.open_alerts(view.ctx.db):
        if a.kind == "retired" and a.subject in recent:
            continue
        out.append(Item(LABELS.get(a.kind, a.kind), a.subject, a.message, a.at,
                        TONES.get(a.kind, "warn"), _buttons(health_alerts.actions(a), a.subject)))
    return out


@source("retired", "Retired automatically this week", live={"alert", "change"})
async def retired_this_week(view: View) -> list[Item]:
    """Each with Restore, and Dismiss while its "retired" alert is open (a dismissed one is gone)."""
    db = view.ctx.db
    out = []
    for r in await health_alerts.retired_this_week(db, view.ctx.clock.now()):
        alert = await alert_store.open_of(db, "retired", r["alias"])
        if alert is not None and alert.dismissed_at is not None:
            continue
        buttons = _buttons(r["actions"], r["alias"])
        if alert is not None:
            buttons += (Button("Dismiss", "/api/alerts/dismiss", {"id": alert.id}),)
        out.append(Item("retired", r["alias"], r["why"], _moment(r["at"]), "", buttons))
    return out


def _figures(brief: Any) -> str:
    """A rating from a suggestion's evidence in words: mean, 90% interval, verdicts behind it."""
    if not isinstance(brief, dict) or "mean" not in brief:
        return ""
    low, high = brief.get("interval") or (brief["mean"], brief["mean"])
    return f"{brief['mean']:.0%} useful ({100 * low:.0f}–{100 * high:.0f}%, {weight(brief.get('weight'))} verdicts)"


def suggestion_message(s: SuggestionRow) -> str:
    """What a suggestion does and why, with the figures behind it (its evidence)."""
    where = f"bench/{s.collection}"
    challenger, member = _figures(s.evidence.get("challenger")), _figures(s.evidence.get("member"))
    if s.kind == "promote" and challenger and member:
        return (f"promote into {where} in place of {s.replaces}: probably better (P = {s.strength:.2f}). "
                f"{s.alias} {challenger}; {s.replaces} {member}.")
    if s.kind == "promote":
        return f"promote into {where} in place of {s.replaces}: {s.reason}."
    figures = _figures(s.evidence)
    return f"bench it from {where}: {s.reason}." + (f" Its rating: {figures}." if figures else "")


@source("suggestions", "Suggestions", live={"verdict", "change", "suggestion"})
async def suggestions(view: View) -> list[Item]:
    """Open suggestions (who to promote or bench, as the last review raised them), oldest first,
    each with Accept (``POST /api/suggestion/accept``: the members change, the change log says why).
    Read as stored: the review after each verdict keeps them current."""
    rows = await rating_store.suggestions(view.ctx.db)
    return [Item(s.kind, s.alias, suggestion_message(s), s.updated_at, "warn" if s.kind == "promote" else "err",
                 (Button("Accept", "/api/suggestion/accept", {"id": s.id}),)) for s in reversed(rows)]


def _moment(value: str | None) -> float | None:
    return datetime.fromisoformat(value).timestamp() if value else None


@dataclass(frozen=True)
class Section:
    source: Source
    items: list[Item]


async def load(view: View) -> list[Section]:
    """Every source's items, in order; only the sources that have some."""
    out = []
    for s in SOURCES:
        try:
            items = await s.load(view)
        except Exception:
            log.exception("the %s items of Action needed failed", s.name)
            continue
        if items:
            out.append(Section(s, items))
    return out
