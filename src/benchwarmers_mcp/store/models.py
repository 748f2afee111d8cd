"""Registered models: alias, served name, endpoint, family, role, known facts, retirement."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from benchwarmers_mcp.errors import BadRequest, NotFound
from benchwarmers_mcp.store import config_version, facts, names
from benchwarmers_mcp.store.changes import log_change
from benchwarmers_mcp.store.db import Database, Reader, Row, Transaction, placeholders

ROLES = ("general", "code", "light", "image", "vision", "decision")


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


def _fields(row: Row) -> dict[str, Any]:
    """A ``models`` row as a record's fields, but for ``options`` (kept as its JSON text: every record
    gets a dict of its own) and ``last_used`` (written by every call, so read live)."""
    return {
        "alias": row["alias"], "served": row["served"], "endpoint": row["endpoint"], "family": row["family"],
        "role": row["role"], "ad_hoc": bool(row["ad_hoc"]), "vision": _opt_bool(row["vision"]),
        "tools": _opt_bool(row["tools"]), "context_window": row["context_window"], "max_output": row["max_output"],
        "retired_at": row["retired_at"], "retired_why": row["retired_why"],
    }


def _record(fields: dict[str, Any], options: str, last_used: float | None) -> ModelRecord:
    return ModelRecord(**fields, options={} if options == "{}" else json.loads(options), last_used=last_used)


def _row(row: Row) -> ModelRecord:
    """A record from a ``models`` row."""
    return _record(_fields(row), row["options"], row["last_used"])


async def unique_alias(db: Database, served: str) -> str:
    base = alias_for(served)
    alias, n = base, 2
    while await db.fetchone("SELECT 1 FROM models WHERE alias = ?", (alias,)):
        alias, n = f"{base}-{n}", n + 1
    return alias


async def check_new(db: Database, record: ModelRecord) -> None:
    """A registration's alias and role are valid, and the alias is free (400 otherwise)."""
    names.check("alias", record.alias, names.ALIAS)
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


# the configuration's stamp with every model's last use (written by every seat and route call, so
# never kept): the one statement ``list_all`` costs once the models are kept
LIVE_SQL = "SELECT v.stamp, m.alias, m.last_used FROM config_version v LEFT JOIN models m ON 1 = 1 WHERE v.id = 1"
KEPT = "models.list_all"


async def list_all(db: Database, *, include_retired: bool = True) -> list[ModelRecord]:
    """Every model by alias. The rows are kept while the configuration is unchanged
    (``config_version``); each read costs one statement, which reads their ``last_used`` afresh, and
    builds new records (``options`` is a dict: never shared)."""
    kept, used = await _read(db)
    return [_record(fields, options, used.get(alias)) for alias, (fields, options) in kept.items()
            if include_retired or fields["retired_at"] is None]


async def of(db: Database, aliases: Sequence[str]) -> dict[str, ModelRecord]:
    """The registered models among ``aliases`` (retired ones too), by alias: a route turn's
    members, with records built for them alone, so a turn costs the same however many models the
    bench has. Their ``last_used`` is not read (None): a turn needs it only to rotate, which reads
    it live (``last_used``); so the records cost the configuration's stamp alone, no statement at
    all inside ``config_version.shared``."""
    if not aliases:
        return {}
    wanted = tuple(dict.fromkeys(aliases))
    kept: _Models = await config_version.cached(db, KEPT, _load)
    return {a: _record(*kept[a], None) for a in wanted if a in kept}


async def last_used(db: Database, aliases: Sequence[str]) -> dict[str, float | None]:
    """When each of ``aliases`` was last used (every seat and route call moves it), read now."""
    if not aliases:
        return {}
    rows = await db.fetchall(f"SELECT alias, last_used FROM models WHERE alias IN ({placeholders(aliases)})",
                             tuple(aliases))
    return {r["alias"]: r["last_used"] for r in rows}


_Models = dict[str, tuple[dict[str, Any], str]]  # by alias: (a record's fields, its options as JSON text)


async def _read(db: Database) -> tuple[_Models, dict[str, float | None]]:
    """The kept models (each one's fields worked out once per configuration) and every model's live
    last use. They are read anew when the configuration changed since."""
    live = await db.fetchall(LIVE_SQL)
    at = int(live[0]["stamp"]) if live else None
    kept: _Models = config_version.held(db, at, KEPT)
    if kept is config_version.MISSING:
        kept = await _load(db)
        config_version.keep(db, at, KEPT, kept)
    return kept, {r["alias"]: r["last_used"] for r in live}


async def _load(db: Reader) -> _Models:
    return {r["alias"]: (_fields(r), r["options"]) for r in await db.fetchall("SELECT * FROM models ORDER BY alias")}


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


async def retire(db: Database, alias: str, why: str, *, by: str = "user", rule: str | None = None,
                 leave_collections: bool = False, evidence: dict[str, Any] | None = None,
                 now: float | None = None) -> ModelRecord:
    """Retire: the model stops being seated. Every seat, verdict, probe and ledger row is kept, and a
    ``retirements`` row records why, by whom (``user`` or ``auto``), the evidence and the collections
    it was in; ``leave_collections`` (auto-retire) also takes it out of them, for a restore to undo."""
    await get(db, alias)
    now = time.time() if now is None else now
    async with db.transaction() as tx:
        member_of = [r[0] for r in await tx.fetchall(
            "SELECT collection FROM collection_members WHERE alias = ? ORDER BY collection", (alias,))]
        await tx.execute("UPDATE models SET retired_at = ?, retired_why = ? WHERE alias = ?", (now, why, alias))
        if leave_collections:
            await tx.execute("DELETE FROM collection_members WHERE alias = ?", (alias,))
        await tx.execute("INSERT INTO retirements (alias, at, why, by, rule, collections, evidence)"
                         " VALUES (?, ?, ?, ?, ?, ?, ?)", (alias, now, why, by, rule, json.dumps(member_of),
                                                             json.dumps(evidence or {}, default=str)))
        await tx.execute("UPDATE alerts SET cleared_at = ?, cleared_why = 'retired' WHERE subject = ?"
                         " AND kind IN ('retiring', 'model_gone', 'registration', 'went_paid') AND cleared_at IS NULL",
                         (now, alias))
        await log_change(tx, "model.retire", alias, {"why": why, "by": by, "rule": rule,
                                                     "left": member_of if leave_collections else [],
                                                     "evidence": evidence or {}})
    return await get(db, alias)


async def set_last_used(db: Database, alias: str, at: float | None) -> None:
    """Set a model's last use exactly (``None``: never used), as explorer seating reads it. Seats and
    route calls move it forward on their own; this is for putting a model back in the queue."""
    await db.write("UPDATE models SET last_used = ? WHERE alias = ?", (at, alias))


async def last_retirement(db: Database, alias: str) -> dict[str, Any] | None:
    row = await db.fetchone("SELECT * FROM retirements WHERE alias = ? ORDER BY id DESC LIMIT 1", (alias,))
    if row is None:
        return None
    out = dict(row)
    out["collections"] = json.loads(out["collections"])
    out["evidence"] = json.loads(out["evidence"])
    out["restored_to"] = json.loads(out["restored_to"]) if out["restored_to"] else None
    return out


async def retired_since(db: Database, since: float, *, by: str | None = None) -> list[dict[str, Any]]:
    """Retirements since ``since`` not restored, newest first (``by``: only ``auto`` or ``user``)."""
    rows = await db.fetchall(
        "SELECT r.* FROM retirements r JOIN models m ON m.alias = r.alias WHERE r.at >= ? AND r.restored_at IS NULL"
        " AND m.retired_at IS NOT NULL" + (" AND r.by = ?" if by else "") + " ORDER BY r.at DESC",
        (since, by) if by else (since,))
    return [{**dict(r), "collections": json.loads(r["collections"]), "evidence": json.loads(r["evidence"])}
            for r in rows]


async def restore(db: Database, alias: str, *, max_members: int | None = None,
                  now: float | None = None) -> ModelRecord:
    """Bring a retired model back as it was (alias, endpoint, role, ad hoc, options stay on its row)
    and into the collections it left that still exist and have room (``max_members``). The health
    clock starts again, and its pending retirement and alerts are cleared."""
    await get(db, alias)
    now = time.time() if now is None else now
    async with db.transaction() as tx:
        last = await tx.fetchone("SELECT id, collections FROM retirements WHERE alias = ? AND restored_at IS NULL"
                                 " ORDER BY id DESC LIMIT 1", (alias,))
        back: list[str] = []
        for name in json.loads(last["collections"]) if last else []:
            if await _rejoin(tx, name, alias, max_members):
                back.append(name)
        await tx.execute("UPDATE models SET retired_at = NULL, retired_why = NULL WHERE alias = ?", (alias,))
        if last is not None:
            await tx.execute("UPDATE retirements SET restored_at = ?, restored_to = ? WHERE id = ?",
                             (now, json.dumps(back), last["id"]))
        else:
            await tx.execute("INSERT INTO retirements (alias, at, why, by, restored_at, restored_to)"
                             " VALUES (?, ?, 'retired before retirements were recorded', 'user', ?, '[]')",
                             (alias, now, now))
        await tx.execute("UPDATE model_states SET pending_retire_at = NULL, pending_why = NULL, strikes = 0"
                         " WHERE alias = ?", (alias,))
        await tx.execute("UPDATE alerts SET cleared_at = ?, cleared_why = 'restored' WHERE subject = ?"
                         " AND kind IN ('retired', 'retiring', 'model_gone', 'registration') AND cleared_at IS NULL",
                         (now, alias))
        await log_change(tx, "model.restore", alias, {"collections": back})
    return await get(db, alias)


async def _rejoin(tx: Transaction, collection: str, alias: str, max_members: int | None) -> bool:
    """Put ``alias`` back at the end of ``collection`` if it still exists, lacks it and has room;
    True when it was put back."""
    if await tx.fetchone("SELECT 1 FROM collections WHERE name = ?", (collection,)) is None:
        return False
    members = await tx.fetchone("SELECT COUNT(*), MAX(position), SUM(CASE WHEN alias = ? THEN 1 ELSE 0 END)"
                                " FROM collection_members WHERE collection = ?", (alias, collection))
    assert members is not None  # an aggregate always answers one row
    count, top, has = members[0] or 0, members[1], members[2] or 0
    if has:
        return False  # it never left (a retirement by hand keeps memberships)
    if max_members is not None and count >= max_members:
        return False
    await tx.execute("INSERT INTO collection_members (collection, alias, position) VALUES (?, ?, ?)",
                     (collection, alias, (top if top is not None else -1) + 1))
    return True
