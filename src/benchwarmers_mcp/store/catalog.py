"""The catalog's own data in the store, so every process and replica sees the same catalog.

Tables (migration ``catalog_001``): ``catalog_feeds`` (the last good copy of each refreshed feed,
and how its last refresh went), ``catalog_seen`` (when this install first saw each catalog entry,
for Discover's "new"), ``catalog_state`` (small named values, such as the catalog version the
model facts were derived from) and ``candidate_dismissals`` (candidates the user dismissed).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from benchwarmers_mcp.store.db import Database


@dataclass(frozen=True)
class Feed:
    """One refreshed feed: its last good body (None before a first success) and its last try."""

    source: str
    body: Any
    entries: int
    fetched_at: float | None
    tried_at: float | None
    error: str
    url: str


async def feeds(db: Database, *, with_bodies: bool = True) -> dict[str, Feed]:
    columns = "source, entries, fetched_at, tried_at, error, url" + (", body" if with_bodies else "")
    rows = await db.fetchall(f"SELECT {columns} FROM catalog_feeds ORDER BY source")
    return {r["source"]: Feed(r["source"], json.loads(r["body"]) if with_bodies and r["body"] else None,
                              r["entries"], r["fetched_at"], r["tried_at"], r["error"], r["url"]) for r in rows}


async def stamps(db: Database) -> dict[str, float]:
    """When each feed last succeeded: what versions the catalog (one small query)."""
    rows = await db.fetchall("SELECT source, fetched_at FROM catalog_feeds WHERE fetched_at IS NOT NULL")
    return {r["source"]: r["fetched_at"] for r in rows}


async def save_feed(db: Database, source: str, url: str, body: Any, entries: int, now: float) -> None:
    """A refresh that worked: its body replaces the last good one."""
    await db.write(
        "INSERT INTO catalog_feeds (source, body, entries, fetched_at, tried_at, error, url) VALUES (?, ?, ?, ?, ?, '', ?)"
        " ON CONFLICT (source) DO UPDATE SET body = excluded.body, entries = excluded.entries,"
        " fetched_at = excluded.fetched_at, tried_at = excluded.tried_at, error = '', url = excluded.url",
        (source, json.dumps(body, separators=(",", ":")), entries, now, now, url))


async def feed_failed(db: Database, source: str, url: str, error: str, now: float) -> None:
    """A refresh that failed: the last good body stays; the failure is kept beside it."""
    await db.write(
        "INSERT INTO catalog_feeds (source, body, entries, fetched_at, tried_at, error, url) VALUES (?, NULL, 0, NULL, ?, ?, ?)"
        " ON CONFLICT (source) DO UPDATE SET tried_at = excluded.tried_at, error = excluded.error, url = excluded.url",
        (source, now, error[:1000], url))


async def get_state(db: Database, name: str) -> str | None:
    value = await db.fetchval("SELECT value FROM catalog_state WHERE name = ?", (name,))
    return None if value is None else str(value)


async def set_state(db: Database, name: str, value: str) -> None:
    await db.write("INSERT INTO catalog_state (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET"
                   " value = excluded.value", (name, value))


async def first_seen(db: Database) -> dict[str, float]:
    rows = await db.fetchall("SELECT entry, first_seen FROM catalog_seen")
    return {r["entry"]: r["first_seen"] for r in rows}


def baseline(released: float | None, now: float) -> float:
    """When an install that has noted nothing yet counts an entry first seen: on its release day
    (or long ago), so a new install does not call everything new."""
    return min(now, released or 0.0)


async def seen_as_of(db: Database, entries: Mapping[str, float | None], now: float) -> dict[str, float]:
    """``first_seen``, read only: before anything is noted, every entry as the first note will record
    it (``baseline``), so a fresh install's first look says what it will keep saying."""
    noted = await first_seen(db)
    return noted or {key: baseline(released, now) for key, released in entries.items()}


async def note_seen(db: Database, entries: Mapping[str, float | None], version: str) -> None:
    """Record entries not seen before, once per catalog version; the first time ever, at their
    ``baseline``."""
    if await get_state(db, "seen_version") == version:
        return
    now = time.time()
    async with db.transaction() as tx:
        is_baseline = await tx.fetchone("SELECT 1 FROM catalog_seen LIMIT 1") is None
        known = {r["entry"] for r in await tx.fetchall("SELECT entry FROM catalog_seen")}
        fresh = [(key, baseline(released, now) if is_baseline else now)
                 for key, released in entries.items() if key not in known]
        await tx.executemany("INSERT INTO catalog_seen (entry, first_seen) VALUES (?, ?)"
                             " ON CONFLICT (entry) DO NOTHING", fresh)  # the first sighting stays
        await tx.execute("INSERT INTO catalog_state (name, value) VALUES ('seen_version', ?) ON CONFLICT (name)"
                         " DO UPDATE SET value = excluded.value", (version,))


async def dismissed(db: Database) -> set[tuple[str, str]]:
    rows = await db.fetchall("SELECT endpoint, served FROM candidate_dismissals")
    return {(r["endpoint"], r["served"]) for r in rows}


async def dismiss(db: Database, endpoint: str, served: str) -> None:
    await db.write("INSERT INTO candidate_dismissals (endpoint, served, at) VALUES (?, ?, ?) ON CONFLICT"
                   " (endpoint, served) DO NOTHING", (endpoint, served, time.time()))


async def undismiss(db: Database, endpoint: str, served: str) -> int:
    return await db.write("DELETE FROM candidate_dismissals WHERE endpoint = ? AND served = ?", (endpoint, served))
