"""What a gateway key's collections use: the models and connections a scoped key may reach.

A collection uses its members, its merger and its explorer pool (``seating.explorer_pool``: every
model that may be drawn as an explorer on it). A scoped key nominates (``with``) only among the
models its collections use, and reads only those models' ratings and those models' connections'
quotas; an unscoped key reaches everything (``None``).

    models(db, access)          the aliases, or None for an unscoped key
    connections(db, aliases)    the connections those models call through
"""

from __future__ import annotations

from collections.abc import Iterable

from benchwarmers_mcp.context import Access
from benchwarmers_mcp.engine.seating import explorer_pool
from benchwarmers_mcp.store import Database
from benchwarmers_mcp.store import collections as collection_store
from benchwarmers_mcp.store import limits as limit_store
from benchwarmers_mcp.store import models as model_store


async def models(db: Database, access: Access) -> frozenset[str] | None:
    """Every model the collections ``access`` may ask use (members, merger, explorer pool); None
    when it may ask every collection."""
    if access.collections is None:
        return None
    everyone = await model_store.list_all(db)
    used: set[str] = set()
    for c in await collection_store.list_all(db):
        if access.allows(c.name):
            used.update(c.members)
            used.update([c.merger] if c.merger else [])
            used.update(m.alias for m in explorer_pool(c, everyone))
    return frozenset(used)


async def connections(db: Database, aliases: Iterable[str]) -> frozenset[str]:
    """The connections (``store.limits``) the models ``aliases`` call through."""
    owners = await limit_store.model_connections(db)
    return frozenset(owners[a] for a in aliases if a in owners)
