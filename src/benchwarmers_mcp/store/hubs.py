"""Hubs: endpoints that front other upstreams (LiteLLM's proxy, Open WebUI, CLI Proxy API), and
what each last said about the upstream behind every model it serves.

Tables (migration ``hubs_001_tables``): ``hub_endpoints`` (which hub an endpoint is and the name of
its admin key in the key store; an endpoint the bench made for one of a hub's upstream connections
names its hub endpoint as ``parent`` and the connection as ``upstream``) and ``hub_models`` (the
hub's last listing of its upstreams: each served name, the connection it comes through and the
model's own name at that upstream, which survives the hub renaming its prefix).

A hub's models are registered on the endpoint made for their upstream connection (same base URL
and key as the hub, its own connection), so rate limits, rests and pauses are kept per real
upstream (``store/limits.py`` keys them by the endpoint's connection). ``place`` moves a model
there, and ``rename`` follows a served name the hub changed: both keep the alias, so the model's
record, ratings and collections stay its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from benchwarmers_mcp.store.changes import log_change
from benchwarmers_mcp.store.db import Database, Row


@dataclass(frozen=True)
class HubEndpoint:
    endpoint: str
    hub: str
    admin_key: str | None = None  # the admin key's name in the key store (never its value)
    parent: str | None = None  # for an endpoint made for one upstream: its hub endpoint
    upstream: str | None = None  # ... and the upstream connection it stands for


@dataclass(frozen=True)
class HubModel:
    served: str
    connection: str
    upstream_model: str


def _hub(row: Row) -> HubEndpoint:
    return HubEndpoint(row["endpoint"], row["hub"], row["admin_key"], row["parent"], row["upstream"])


async def set_hub(db: Database, entry: HubEndpoint) -> None:
    async with db.transaction() as tx:
        await tx.execute(
            "INSERT INTO hub_endpoints (endpoint, hub, admin_key, parent, upstream) VALUES (?, ?, ?, ?, ?)"
            " ON CONFLICT (endpoint) DO UPDATE SET hub = excluded.hub, admin_key = excluded.admin_key,"
            " parent = excluded.parent, upstream = excluded.upstream",
            (entry.endpoint, entry.hub, entry.admin_key, entry.parent, entry.upstream))
        await log_change(tx, "endpoint.hub", entry.endpoint, {"hub": entry.hub, "parent": entry.parent,
                                                              "upstream": entry.upstream})


async def hub_of(db: Database, endpoint: str) -> HubEndpoint | None:
    row = await db.fetchone("SELECT * FROM hub_endpoints WHERE endpoint = ?", (endpoint,))
    return None if row is None else _hub(row)


async def all_hubs(db: Database) -> list[HubEndpoint]:
    return [_hub(r) for r in await db.fetchall("SELECT * FROM hub_endpoints ORDER BY endpoint")]


async def routes_of(db: Database, parent: str) -> list[HubEndpoint]:
    """The endpoints made for a hub's upstream connections."""
    rows = await db.fetchall("SELECT * FROM hub_endpoints WHERE parent = ? ORDER BY endpoint", (parent,))
    return [_hub(r) for r in rows]


async def forget_hub(db: Database, endpoint: str) -> None:
    """An endpoint removed: its hub row and its listing go (the endpoints made for it are removed
    by whoever removes them, each through ``endpoints.remove``)."""
    async with db.transaction() as tx:
        await tx.execute("DELETE FROM hub_endpoints WHERE endpoint = ?", (endpoint,))
        await tx.execute("DELETE FROM hub_models WHERE endpoint = ?", (endpoint,))


async def listing(db: Database, endpoint: str) -> dict[str, HubModel]:
    rows = await db.fetchall("SELECT served, connection, upstream_model FROM hub_models WHERE endpoint = ?",
                             (endpoint,))
    return {r["served"]: HubModel(r["served"], r["connection"], r["upstream_model"]) for r in rows}


async def save_listing(db: Database, endpoint: str, models: list[HubModel], now: float) -> None:
    """The hub's listing now: each served name with its upstream, replacing the last one."""
    async with db.transaction() as tx:
        await tx.execute("DELETE FROM hub_models WHERE endpoint = ?", (endpoint,))
        await tx.executemany("INSERT INTO hub_models (endpoint, served, connection, upstream_model, seen_at)"
                             " VALUES (?, ?, ?, ?, ?)",
                             [(endpoint, m.served, m.connection, m.upstream_model, now) for m in models])


async def place(db: Database, alias: str, endpoint: str, served: str, why: str) -> None:
    """Move a registered model to ``endpoint`` under ``served`` (its alias, record and collections
    stay): a hub model onto the endpoint of its upstream, or a name the hub renamed."""
    async with db.transaction() as tx:
        await tx.execute("UPDATE models SET endpoint = ?, served = ? WHERE alias = ?", (endpoint, served, alias))
        await log_change(tx, "model.hub", alias, {"endpoint": endpoint, "served": served, "why": why})


__all__ = ["HubEndpoint", "HubModel", "all_hubs", "forget_hub", "hub_of", "listing", "place", "routes_of",
           "save_listing", "set_hub"]
