"""Alerts as the user sees them: what happened, and the actions that answer it (each an admin API
call and the CLI command that makes it). The rows live in ``store/alerts.py``; the jobs raise,
refresh and clear them through the functions here."""

from __future__ import annotations

import math
from typing import Any

from benchwarmers_mcp.store import alerts as alert_store
from benchwarmers_mcp.store import models as model_store
from benchwarmers_mcp.store.alerts import Alert
from benchwarmers_mcp.store.db import Database
from benchwarmers_mcp.upstream.quota import iso

__all__ = ["actions", "answered", "describe", "retired_this_week", "retiring"]
DAY = 86400.0
WEEK = 7 * DAY


def _action(label: str, path: str, body: dict[str, Any] | None, cli: str | None, *, method: str = "POST",
            asks: tuple[str, ...] = ()) -> dict[str, Any]:
    """One action: the admin API call that takes it (``method``, ``path``, ``body``), the CLI command
    (None when there is none), and ``asks``: body fields the user must still supply (a new key)."""
    return {"label": label, "method": method, "path": path, "body": body, "cli": cli, "asks": list(asks)}


def actions(alert: Alert) -> list[dict[str, Any]]:
    """What the user can do about ``alert``, first the one that usually answers it; Dismiss last."""
    s, kind = alert.subject, alert.kind
    endpoint = str(alert.detail.get("endpoint") or s)  # a connection's alerts name one of its endpoints
    retire = _action("Retire", "/api/model/retire", {"alias": s, "reason": alert.message[:300]},
                     f"bench model retire {s} --yes")
    if kind in ("retiring", "model_gone"):
        found = [_action("Retry now", "/api/model/retry", {"alias": s}, f"bench model retry {s}"), retire]
    elif kind == "retired":
        found = [_action("Restore", "/api/model/restore", {"alias": s}, f"bench model restore {s}")]
    elif kind == "connection_held":
        found = [_action("Retire all", "/api/health/retire-all", {"connection": s}, f"bench alerts retire-all {s}"),
                 _action("Test the endpoint", "/api/endpoint/test", {"name": endpoint},
                         f"bench endpoint test {endpoint}")]
    elif kind == "registration":
        found = [retire, _action("See what it lists", "/api/candidates", {"endpoint": endpoint},
                                 f"bench candidates --endpoint {endpoint}")]
    elif kind == "went_paid":
        found = [_action("Mark ad hoc", "/api/model", {"alias": s, "ad_hoc": True}, f"bench model ad-hoc {s} on"),
                 retire]
    elif kind in ("auth", "billing"):
        found = [_action("Resume", "/api/limits/resume", {"connection": s}, None),
                 _action("Replace the key", "/api/endpoint/key", {"name": endpoint}, f"bench endpoint key {endpoint}",
                         asks=("key",))]
    else:
        found = []
    return [*found, _action("Dismiss", "/api/alerts/dismiss", {"id": alert.id}, f"bench alerts dismiss {alert.id}")]


def describe(alert: Alert) -> dict[str, Any]:
    return {"id": alert.id, "kind": alert.kind, "subject": alert.subject, "message": alert.message,
            "at": iso(alert.at), "refreshed_at": iso(alert.refreshed_at), "dismissed": alert.dismissed_at is not None,
            "detail": alert.detail, "actions": actions(alert)}


def days_left(retires_at: float, now: float) -> int:
    return max(0, math.ceil((retires_at - now) / DAY))


async def retiring(db: Database, alias: str, why: str, retires_at: float, now: float) -> None:
    n = days_left(retires_at, now)
    when = "today" if n == 0 else "tomorrow" if n == 1 else f"in {n} days"
    await alert_store.raise_one(db, "retiring", alias, f"{alias} retires {when} unless it answers: {why}",
                                {"retires_at": iso(retires_at), "days": n, "why": why}, now)


async def answered(db: Database, alias: str, connection: str, now: float) -> None:
    """A model answered: its retiring alerts are over, and so is a hold on its connection."""
    await alert_store.model_answered(db, alias, connection, now)


async def retired_this_week(db: Database, now: float) -> list[dict[str, Any]]:
    """Models retired automatically in the last 7 days and not restored, newest first, each with
    its Restore action (``GET /api/alerts``' ``retired_this_week``)."""
    return [{"alias": r["alias"], "at": iso(r["at"]), "why": r["why"], "rule": r["rule"],
             "collections": r["collections"],
             "actions": [_action("Restore", "/api/model/restore", {"alias": r["alias"]},
                                 f"bench model restore {r['alias']}")]}
            for r in await model_store.retired_since(db, now - WEEK, by="auto")]
