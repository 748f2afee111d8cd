"""Small choices the user makes once, kept in the ``settings`` table: the default endpoint (the
one the dashboard offers first when models are registered)."""

from __future__ import annotations

from benchwarmers_mcp.errors import NotFound
from benchwarmers_mcp.store.changes import log_change
from benchwarmers_mcp.store.db import Database

DEFAULT_ENDPOINT = "default_endpoint"


async def default_endpoint(db: Database) -> str | None:
    """The default endpoint's name, if it is set and still exists."""
    value = await db.fetchval(
        "SELECT s.value FROM settings s JOIN endpoints e ON e.name = s.value WHERE s.name = ?", (DEFAULT_ENDPOINT,))
    return None if value is None else str(value)


async def set_default_endpoint(db: Database, name: str) -> None:
    async with db.transaction() as tx:
        if await tx.fetchone("SELECT 1 FROM endpoints WHERE name = ?", (name,)) is None:
            raise NotFound(f"no endpoint named {name!r}")
        await tx.execute("INSERT INTO settings (name, value) VALUES (?, ?)"
                         " ON CONFLICT (name) DO UPDATE SET value = excluded.value", (DEFAULT_ENDPOINT, name))
        await log_change(tx, "endpoint.default", name, {})
