"""Logs: the newest panels (seats, status, judged or owed), route conversations (who answered,
turns, tool calls, failovers, the last turn) and changes in words (``change_words``: what was done
and its details as a person reads them, never a Python repr), never a prompt; one filter each;
every table newest first."""

from __future__ import annotations

from typing import Any

from benchwarmers_mcp.store import logs
from benchwarmers_mcp.web.registry import Page, View

NEWEST = 200
DONE = {"model.register": "registered model", "model.update": "changed model", "model.retire": "retired model",
        "model.restore": "restored model", "endpoint.save": "saved endpoint", "endpoint.remove": "removed endpoint",
        "endpoint.default": "made the default endpoint", "collection.save": "saved collection",
        "collection.delete": "deleted collection", "collection.members": "changed the members of",
        "settings.gateway": "changed the gateway settings", "settings.learning": "changed the learning settings",
        "settings.scheduler": "changed the scheduler"}
NAMES = {"served": "served name", "base_url": "base URL", "api": "API", "key_name": "key", "why": "why",
         "by": "by", "rule": "rule", "left": "left", "collections": "back in", "max_calls": "most seats",
         "max_explorers": "most explorers", "context_window": "context window", "max_output": "max output",
         "ad_hoc": "ad hoc", "members": "members", "before": "before", "replaces": "in place of",
         "scoped_verdicts": "scoped verdicts", "off": "jobs off", "times": "times", "since": "on since"}


def words(value: Any) -> str:
    """A detail's value as a person reads it: a list joined, a mapping as ``name value`` pairs, yes/no."""
    if value is None or value == "" or value == [] or value == {}:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ", ".join(words(v) for v in value)
    if isinstance(value, dict):
        return "; ".join(f"{NAMES.get(k, k.replace('_', ' '))} {words(v)}" for k, v in value.items())
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def change_words(change: dict[str, Any]) -> dict[str, Any]:
    """A change row in words: what was done (``retired model``) and each detail as ``name: value``."""
    detail = change.get("detail") or {}
    shown = [f"{NAMES.get(k, k.replace('_', ' '))}: {words(v)}" for k, v in detail.items()
             if v not in (None, "", [], {})]
    what = str(change.get("what") or "")
    return {**change, "done": DONE.get(what, what.replace(".", " ").replace("_", " ")), "said": "; ".join(shown)}


async def load(view: View) -> dict[str, Any]:
    db = view.ctx.db
    return {"panels": await logs.panels(db, NEWEST), "conversations": await logs.conversations(db, NEWEST),
            "changes": [change_words(c) for c in await logs.changes(db, NEWEST)], "newest": NEWEST}


PAGE = Page("/logs", "Logs", "Observe", 20, "logs.html", load,
            live=frozenset({"panel", "seat", "verdict", "route", "change"}))
