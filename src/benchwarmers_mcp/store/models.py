"""Registered models: alias, served name, endpoint, family, role, known facts, retirement."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from benchwarmers_mcp.errors import BadRequest, NotFound
from benchwarmers_mcp.store import facts
from benchwarmers_mcp.store.changes import log_change
from benchwarmers_mcp.store.db import Database, Row

ROLES = ("general", "code", "light", "image", "vision", "decision")
ALIAS_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


def alias_for(served: str) -> str:
    """The reference's alias rule: drop the vendor prefix, ':' becomes '-', lower case."""
    name = served.rsplit("/", 1)[-1].replace(":", "-").lower()
    name = re.sub(r"[^a-z0-9._-]+", "-", name).strip("-.")
    return name or "model"


def family_of(served: str) -> str:
    """The normalised served name: vendor prefix, ':free', case and separators removed."""
    name = served.rsplit("/", 1)[-1].lower()
    name = re.sub(r":(free|latest|beta)$", "", name)
    return re.sub(r"[^a-z0-9]+", "", name)


@dataclass(frozen=True)
class ModelRecord:
    alias: str
    served: str
    endpoint: str
    family: str
    role: str = "general"
    ad_hoc: bool = False
    vision: bool | None = None
    tools: bool | None = None
    context_window: int | None = None
    max_output: int | None = None
    options: dict[str, Any] = field(default_factory=dict)
    last_used: float | None = None
    retired_at: float | None = None
    retired_why: str | None = None

    @property
    def retired(self) -> bool:
        return self.retired_at is not None

    @property
    def can_see(self) -> bool:
        """Unknown counts as cannot."""
        return bool(self.vision) or self.role == "vision"


def _opt_bool(value: Any) -> bool | None:
    return None if value is None else bool(value)


def _opt_int(value: bool | None) -> int | None:
    """A yes/no/unknown fact as its column holds it (an integer, so every backend takes it)."""
    return None if value is None else int(value)


def _row(row: Row) -> ModelRecord:
    return ModelRecord(
        alias=row["alias"], served=row["served"], endpoint=row["endpoint"], family=row["family"],
        role=row["role"], ad_hoc=bool(row["ad_hoc"]), vision=_opt_bool(row["vision"]),
        tools=_opt_bool(row["tools"]), context_window=row["context_window"], max_output=row["max_output"],
        options=json.loads(row["options"]), last_used=row["last_used"], retired_at=row["retired_at"],
        retired_why=row["retired_why"],
    )


async def unique_alias(db: Database, served: str) -> str:
    base = alias_for(served)
    alias, n = base, 2
    while await db.fetchone("SELECT 1 FROM models WHERE alias = ?", (alias,)):
        alias, n = f"{base}-{n}", n + 1
    return alias


async def check_new(db: Database, record: ModelRecord) -> None:
    """A registration's alias and role are valid, and the alias is free (400 otherwise)."""
    if not ALIAS_RE.match(record.alias):
        raise BadRequest("alias must be lower-case letters, digits, '.', '_' or '-' (at most 64)")
    if record.role not in ROLES:
        raise BadRequest(f"role must be one of {', '.join(ROLES)}")
    if await db.fetchone("SELECT 1 FROM models WHERE alias = ?", (record.alias,)):
        raise BadRequest(f"alias {record.alias!r} is taken (an alias is never reused)")


async def register(db: Database, record: ModelRecord, layers: Sequence[facts.Layer] = ()) -> ModelRecord:
    """Put a model on the bench. Its facts given here are the user's; ``layers`` are the other
    sources' (catalog, listing), written in the same transaction, and the row carries the winners."""
    await check_new(db, record)
    async with db.transaction() as tx:
        await tx.execute(
            "INSERT INTO models (alias, served, endpoint, family, role, ad_hoc, vision, tools, context_window,"
            " max_output, options, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (record.alias, record.served, record.endpoint, record.family or family_of(record.served),
             record.role, int(record.ad_hoc), _opt_int(record.vision), _opt_int(record.tools), record.context_window,
             record.max_output, json.dumps(record.options), time.time()),
        )
        await facts.record_new(tx, record.alias, {name: getattr(record, name) for name in facts.ROW_FACTS}, layers)
        await log_change(tx, "model.register", record.alias, {"served": record.served, "endpoint": record.endpoint})
    return await get(db, record.alias)


async def get(db: Database, alias: str) -> ModelRecord:
    row = await db.fetchone("SELECT * FROM models WHERE alias = ?", (alias,))
    if row is None:
        raise NotFound(f"no model with alias {alias!r}")
    return _row(row)


async def find(db: Database, alias: str) -> ModelRecord | None:
    row = await db.fetchone("SELECT * FROM models WHERE alias = ?", (alias,))
    return None if row is None else _row(row)


async def list_all(db: Database, *, include_retired: bool = True) -> list[ModelRecord]:
    sql = "SELECT * FROM models" + ("" if include_retired else " WHERE retired_at IS NULL") + " ORDER BY alias"
    return [_row(r) for r in await db.fetchall(sql)]


UPDATABLE = {"role", "ad_hoc", "vision", "tools", "context_window", "max_output", "options", "served", "endpoint"}


async def update(db: Database, alias: str, **fields: Any) -> ModelRecord:
    await get(db, alias)
    unknown = set(fields) - UPDATABLE
    if unknown:
        raise BadRequest(f"cannot change {', '.join(sorted(unknown))}")
    if "role" in fields and fields["role"] not in ROLES:
        raise BadRequest(f"role must be one of {', '.join(ROLES)}")
    known = {k: v for k, v in fields.items() if k in facts.ROW_FACTS}  # the user's say: kept with its source
    values = {k: (json.dumps(v) if k == "options" else int(v) if isinstance(v, bool) else v) for k, v in fields.items()
              if k not in known}
    if values or known:
        async with db.transaction() as tx:
            if values:
                sets = ", ".join(f"{k} = ?" for k in values)
                await tx.execute(f"UPDATE models SET {sets} WHERE alias = ?", (*values.values(), alias))
            if known:
                await facts.set_user(tx, alias, known)
                await facts.recompute(tx, alias)
            await log_change(tx, "model.update", alias, fields)
    return await get(db, alias)


async def retire(db: Database, alias: str, why: str) -> ModelRecord:
    """Retire: the model stops being seated. Every seat, verdict and ledger row is kept."""
    await get(db, alias)
    async with db.transaction() as tx:
        await tx.execute("UPDATE models SET retired_at = ?, retired_why = ? WHERE alias = ?", (time.time(), why, alias))
        await log_change(tx, "model.retire", alias, {"why": why})
    return await get(db, alias)


async def set_last_used(db: Database, alias: str, at: float | None) -> None:
    """Set a model's last use exactly (``None``: never used), as explorer seating reads it. Seats and
    route calls move it forward on their own; this is for putting a model back in the queue."""
    await db.write("UPDATE models SET last_used = ? WHERE alias = ?", (at, alias))


async def restore(db: Database, alias: str) -> ModelRecord:
    await get(db, alias)
    async with db.transaction() as tx:
        await tx.execute("UPDATE models SET retired_at = NULL, retired_why = NULL WHERE alias = ?", (alias,))
        await log_change(tx, "model.restore", alias, {})
    return await get(db, alias)
