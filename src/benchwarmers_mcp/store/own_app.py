"""Providers whose free models work only in the provider's own app (its chat site or tool), not
through its API: the user's switch, per provider (a catalog provider id), kept as one row of the
``settings`` table (``own_app_free``: a JSON list). ``catalog/own_app.py`` says what it keeps off
panels and out of Discover's free list."""

from __future__ import annotations

import json

from benchwarmers_mcp.store import config_version
from benchwarmers_mcp.store.changes import log_change
from benchwarmers_mcp.store.db import Database, Reader

SETTING = "own_app_free"
KEY = ("own_app.providers",)


async def _read(db: Reader) -> frozenset[str]:
    value = await db.fetchval("SELECT value FROM settings WHERE name = ?", (SETTING,))
    try:
        found = json.loads(value) if value else []
    except ValueError:
        found = []
    return frozenset(str(p) for p in found) if isinstance(found, list) else frozenset()


async def providers(db: Database) -> frozenset[str]:
    """The providers switched on (kept while the configuration is unchanged)."""
    return await config_version.cached(db, KEY, _read)


async def switch(db: Database, provider: str, own_app_only: bool) -> frozenset[str]:
    """Switch one provider on or off; the providers switched on after it."""
    async with db.transaction() as tx:
        now = set(await _read(tx))
        (now.add if own_app_only else now.discard)(provider)
        await tx.execute("INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE"
                         " SET value = excluded.value", (SETTING, json.dumps(sorted(now))))
        await log_change(tx, "settings.own_app_free", provider, {"own_app_only": own_app_only})
    return frozenset(now)


__all__ = ["providers", "switch"]
