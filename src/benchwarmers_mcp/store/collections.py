"""Collections: named groups of members, with what they are for and how they reply."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from benchwarmers_mcp.errors import BadRequest, NotFound, UnknownCollection
from benchwarmers_mcp.store import config_version, names
from benchwarmers_mcp.store.changes import log_change
from benchwarmers_mcp.store.db import Database, Reader
from benchwarmers_mcp.store.portable import read_text

REPLIES = ("all", "merged", "route")
SHAPES = ("", "general", "design", "prose", "review", "code", "enumeration", "quick", "vision", "image")


@dataclass(frozen=True)
class Collection:
    name: str
    members: tuple[str, ...] = ()
    description: str = ""
    tags: tuple[str, ...] = ()
    shape: str = ""
    reply: str = "all"
    merger: str = ""

    @property
    def qualified(self) -> str:
        return f"bench/{self.name}"

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "members": list(self.members), "description": self.description,
                "tags": list(self.tags), "shape": self.shape, "reply": self.reply, "merger": self.merger}


@dataclass(frozen=True)
class GatewaySettings:
    max_calls: int = 5
    max_explorers: int = 2

    def explorers_for(self, members: int) -> int:
        return max(0, min(self.max_explorers, self.max_calls - members))


def validate(c: Collection, settings: GatewaySettings, known_aliases: set[str]) -> None:
    names.check("collection name", c.name)
    if len(c.members) > settings.max_calls:
        raise BadRequest(f"a collection has at most max_calls ({settings.max_calls}) members")
    unknown = [m for m in c.members if m not in known_aliases]
    if unknown:
        raise BadRequest(f"unknown model aliases: {', '.join(unknown)}")
    if len(c.description) > 300:
        raise BadRequest("description is at most 300 characters")
    if len(c.tags) > 8:
        raise BadRequest("a collection has at most 8 tags")
    for tag in c.tags:
        names.check("tag", tag, names.TAG)
    if c.reply not in REPLIES:
        raise BadRequest(f"reply must be one of {', '.join(REPLIES)}")
    if c.shape not in SHAPES:
        raise BadRequest(f"unknown shape {c.shape!r}; shapes: {', '.join(s for s in SHAPES if s)}")
    if c.merger and c.merger not in known_aliases:
        raise BadRequest(f"merger {c.merger!r} is not a model on the bench")


async def gateway_settings(db: Database) -> GatewaySettings:
    """Kept while the configuration is unchanged (``config_version``)."""
    return await config_version.cached(db, "collections.gateway_settings", _gateway_settings)


async def _gateway_settings(db: Reader) -> GatewaySettings:
    row = await db.fetchval("SELECT value FROM settings WHERE name = 'gateway'")
    return GatewaySettings(**json.loads(row)) if row else GatewaySettings()


async def save_gateway_settings(db: Database, settings: GatewaySettings) -> GatewaySettings:
    if not 1 <= settings.max_calls <= 10:
        raise BadRequest("max_calls is 1 to 10")
    if not 0 <= settings.max_explorers <= 2:
        raise BadRequest("max_explorers is 0 to 2")
    value = json.dumps({"max_calls": settings.max_calls, "max_explorers": settings.max_explorers})
    async with db.transaction() as tx:
        await tx.execute("INSERT INTO settings (name, value) VALUES ('gateway', ?)"
                         " ON CONFLICT (name) DO UPDATE SET value = excluded.value", (value,))
        await log_change(tx, "settings.gateway", "gateway", json.loads(value))
    return settings


async def save(db: Database, c: Collection) -> Collection:
    known = {r[0] for r in await db.fetchall("SELECT alias FROM models")}
    members = tuple(dict.fromkeys(c.members))
    c = Collection(c.name, members, c.description, tuple(c.tags), c.shape, c.reply, c.merger)
    validate(c, await gateway_settings(db), known)
    now = time.time()
    async with db.transaction() as tx:
        await tx.execute(
            "INSERT INTO collections (name, description, tags, shape, reply, merger, created_at, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET description=excluded.description,"
            " tags=excluded.tags, shape=excluded.shape, reply=excluded.reply, merger=excluded.merger,"
            " updated_at=excluded.updated_at",
            (c.name, c.description, json.dumps(list(c.tags)), c.shape, c.reply, c.merger, now, now),
        )
        await tx.execute("DELETE FROM collection_members WHERE collection = ?", (c.name,))
        await tx.executemany(
            "INSERT INTO collection_members (collection, alias, position) VALUES (?, ?, ?)",
            [(c.name, alias, i) for i, alias in enumerate(c.members)],
        )
        await log_change(tx, "collection.save", c.name, c.as_dict())
    return c


async def get(db: Database, name: str) -> Collection:
    """A collection by name (404 if there is none), kept while the configuration is unchanged
    (``config_version``: a collection is frozen, tuples inside, so the kept one is handed out)."""
    return await config_version.cached(db, ("collections.get", name), lambda reader: _read(reader, name))


async def _read(db: Reader, name: str) -> Collection:
    rows = await db.fetchall(
        "SELECT c.*, m.alias AS member FROM collections c LEFT JOIN collection_members m ON m.collection = c.name"
        " WHERE c.name = ? ORDER BY m.position", (name,))
    if not rows:
        raise NotFound(f"no collection named {name!r}")
    row = rows[0]
    return Collection(row["name"], tuple(r["member"] for r in rows if r["member"] is not None),
                      read_text(row["description"], db.dialect), tuple(json.loads(row["tags"])), row["shape"],
                      row["reply"], row["merger"])


async def list_all(db: Database) -> list[Collection]:
    """Every collection by name, kept while the configuration is unchanged (``config_version``)."""
    return list(await config_version.cached(db, "collections.list_all", _all))


async def _all(db: Reader) -> tuple[Collection, ...]:
    names = [r[0] for r in await db.fetchall("SELECT name FROM collections ORDER BY name")]
    return tuple([await _read(db, n) for n in names])


async def memberships(db: Database, alias: str) -> list[str]:
    """The collections a model is a member of, by name."""
    rows = await db.fetchall("SELECT collection FROM collection_members WHERE alias = ? ORDER BY collection", (alias,))
    return [r[0] for r in rows]


async def delete(db: Database, name: str) -> None:
    await get(db, name)
    async with db.transaction() as tx:
        await tx.execute("DELETE FROM collection_members WHERE collection = ?", (name,))
        await tx.execute("DELETE FROM collections WHERE name = ?", (name,))
        await log_change(tx, "collection.delete", name, {})


async def resolve(db: Database, name: str) -> Collection:
    """A collection by its name as a caller gave it; unknown names list every collection."""
    try:
        return await get(db, name)
    except NotFound:
        pass
    everything = await list_all(db)
    if not everything:
        listing = "there are no collections yet; make one with `bench collection save <name> --members a,b`"
    else:
        listing = "collections: " + "; ".join(
            f"bench/{c.name}" + (f" ({c.description})" if c.description else "")
            + (f" [{', '.join(c.tags)}]" if c.tags else "") for c in everything
        )
    raise UnknownCollection(f"unknown collection {name!r}; {listing}") from None
