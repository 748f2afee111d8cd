"""Gateway keys: named, revocable, optionally scoped to collections and capped in requests a minute.

Only a key's SHA-256 is stored, with its last four characters as a hint; the key itself is shown
once, when it is made, and never again. The rpm window lives here too (``key_hits``), so every
process on the data folder counts one key's requests together, and a restart forgets nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from benchwarmers_mcp.store.db import Database, Row

WINDOW = 60.0  # seconds in the rpm window
TOUCH_EVERY = 60.0  # last_used is written at most this often


@dataclass(frozen=True)
class GatewayKey:
    name: str
    sha256: str
    hint: str
    created: float
    collections: tuple[str, ...] | None = None
    rpm: int | None = None
    last_used: float | None = None

    def public(self) -> dict[str, Any]:
        """What may be shown: everything but the digest (and never the key, which is not here)."""
        return {"name": self.name, "hint": self.hint,
                "collections": list(self.collections) if self.collections is not None else None,
                "rpm": self.rpm, "created": int(self.created),
                "last_used": int(self.last_used) if self.last_used is not None else None}


def _row(row: Row) -> GatewayKey:
    scope = json.loads(row["collections"]) if row["collections"] is not None else None
    return GatewayKey(row["name"], row["sha256"], row["hint"], row["created"],
                      tuple(scope) if scope is not None else None, row["rpm"], row["last_used"])


async def add(db: Database, key: GatewayKey) -> bool:
    """Store a new key; False when the name is taken."""
    scope = json.dumps(list(key.collections)) if key.collections is not None else None
    added = await db.write(
        "INSERT INTO gateway_keys (name, sha256, hint, collections, rpm, created, last_used)"
        " VALUES (?, ?, ?, ?, ?, ?, NULL) ON CONFLICT (name) DO NOTHING",
        (key.name, key.sha256, key.hint, scope, key.rpm, key.created))
    return added > 0


async def list_all(db: Database) -> list[GatewayKey]:
    return [_row(r) for r in await db.fetchall("SELECT * FROM gateway_keys ORDER BY name")]


async def find(db: Database, name: str) -> GatewayKey | None:
    row = await db.fetchone("SELECT * FROM gateway_keys WHERE name = ?", (name,))
    return None if row is None else _row(row)


async def remove(db: Database, name: str) -> bool:
    async with db.transaction() as tx:
        gone = await tx.execute("DELETE FROM gateway_keys WHERE name = ?", (name,))
        await tx.execute("DELETE FROM key_hits WHERE key_name = ?", (name,))
    return gone > 0


async def admit(db: Database, key: GatewayKey, now: float) -> float | None:
    """Count one request by ``key``; returns seconds to wait when over its rpm (nothing counted then).

    A key with no rpm is not counted; its ``last_used`` is still kept (at most once a minute).
    """
    touch = key.last_used is None or now - key.last_used >= TOUCH_EVERY
    if key.rpm is None and not touch:
        return None
    async with db.transaction() as tx:
        if key.rpm is not None:
            await tx.execute("DELETE FROM key_hits WHERE key_name = ? AND at <= ?", (key.name, now - WINDOW))
            row = await tx.fetchone("SELECT COUNT(*) AS n, MIN(at) AS first FROM key_hits WHERE key_name = ?",
                                    (key.name,))
            if row is not None and row["n"] >= key.rpm:
                return max(0.0, float(row["first"]) + WINDOW - now)
            # counted only while the key exists: a revocation racing this request leaves no stray hit
            # (the cast tells a strict backend what type a parameter in a select list has)
            await tx.execute("INSERT INTO key_hits (key_name, at) SELECT name, CAST(? AS DOUBLE PRECISION)"
                             " FROM gateway_keys WHERE name = ?", (now, key.name))
        if touch:
            await tx.execute("UPDATE gateway_keys SET last_used = ? WHERE name = ?", (now, key.name))
    return None
