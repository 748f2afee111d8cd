"""Verdicts: append-only; the latest line per call wins; the same verdict twice writes nothing.

Every function that serves a caller takes the caller's ``Access`` (no default: closed by default)
and answers for the collections it may use only: a verdict on another collection's call is refused
403 (``record``), another collection's record is refused 403 (``record_counts``), and another
collection's calls are left out of ``pending`` as if they were not pending (a list never says
whether some other collection's call exists). Each line keeps the key that sent it and, for a
scoped key, its collections as they were then (``scope``, JSON; NULL for an unscoped key): a scoped
key's verdicts move only those collections' ratings (``store.ratings.evidence``), even after the key
is revoked or another key takes its name.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from benchwarmers_mcp.errors import Forbidden, NotFound
from benchwarmers_mcp.store.db import Database, Reader, Row, placeholders
from benchwarmers_mcp.store.portable import read_text

if TYPE_CHECKING:  # context imports the store; the store only calls an Access's methods
    from benchwarmers_mcp.context import Access

ANSWERED = ("ok", "empty")


@dataclass(frozen=True)
class Verdict:
    call: str
    useful: bool
    note: str = ""
    real: tuple[str, ...] = ()
    false: tuple[str, ...] = ()
    at: float = field(default_factory=time.time)

    def as_dict(self) -> dict[str, Any]:
        return {"call": self.call, "useful": self.useful, "note": self.note, "real": list(self.real),
                "false": list(self.false), "at": self.at}


async def call_target(db: Reader, call: str) -> dict[str, Any] | None:
    """What a call id points at: a panel seat (or merger), a route conversation's member, or a shadow answer."""
    row = await db.fetchone(
        "SELECT s.alias, s.status, s.label, p.collection, p.shape FROM seats s JOIN panels p ON p.id = s.panel"
        " WHERE s.call = ?", (call,))
    if row is not None:
        return {"alias": row["alias"], "status": row["status"], "seat": row["label"],
                "collection": row["collection"], "shape": row["shape"]}
    row = await db.fetchone("SELECT alias, collection FROM route_calls WHERE call = ?", (call,))
    if row is not None:
        return {"alias": row["alias"], "status": "ok", "seat": "route", "collection": row["collection"],
                "shape": "route"}
    row = await db.fetchone("SELECT alias, status, collection FROM shadow_calls WHERE call = ?", (call,))
    if row is not None:  # a shadow answer to a route turn (``store.ratings``), judged later
        return {"alias": row["alias"], "status": row["status"], "seat": "shadow", "collection": row["collection"],
                "shape": "route"}
    return None


@dataclass(frozen=True)
class VerdictLine:
    """One line of the append-only verdict log: the verdict as stored, the key that sent it and,
    for a scoped key, its collections then."""

    verdict: Verdict
    key_name: str
    scope: tuple[str, ...] | None = None


def _verdict(row: Row, dialect: str) -> Verdict:
    return Verdict(row["call"], bool(row["useful"]), read_text(row["note"], dialect), tuple(json.loads(row["real"])),
                   tuple(json.loads(row["false_claims"])), row["at"])


async def latest(db: Reader, call: str) -> Verdict | None:
    row = await db.fetchone("SELECT * FROM verdicts WHERE call = ? ORDER BY id DESC LIMIT 1", (call,))
    return None if row is None else _verdict(row, db.dialect)


async def log(db: Database, call: str | None = None) -> list[VerdictLine]:
    """Every line of the verdict log (or one call's), in the order written."""
    if call is None:
        rows = await db.fetchall("SELECT * FROM verdicts ORDER BY id")
    else:
        rows = await db.fetchall("SELECT * FROM verdicts WHERE call = ? ORDER BY id", (call,))
    return [VerdictLine(_verdict(r, db.dialect), r["key_name"],
                        None if r["scope"] is None else tuple(json.loads(r["scope"]))) for r in rows]


def _scope_of(access: Access) -> str:
    return ", ".join(f"bench/{c}" for c in access.collections or ())


def _check_call(access: Access, call: str, collection: str) -> None:
    """403 when ``access`` may not use the collection ``call`` belongs to (which is not named)."""
    if not access.allows(collection):
        raise Forbidden(f"call {call!r} is not one this gateway key may judge: key {access.key_name!r} "
                        f"covers only {_scope_of(access)}")


async def record(db: Database, verdict: Verdict, *, access: Access) -> tuple[Verdict, bool]:
    """Record a verdict for the caller ``access``: 404 for an unknown call, 403 for a call of a
    collection the caller may not use. Blank note/real/false keep the earlier values. Returns
    (verdict, written).

    The check against the latest line and the insert run in one write transaction, which every
    writer of every process takes in turn: the same verdict sent twice at once writes one line."""
    async with db.transaction() as tx:
        target = await call_target(tx, verdict.call)
        if target is None:
            raise NotFound(f"no call with id {verdict.call!r}")
        _check_call(access, verdict.call, target["collection"])
        before = await latest(tx, verdict.call)
        if before is not None:
            verdict = Verdict(verdict.call, verdict.useful, verdict.note or before.note,
                              verdict.real or before.real, verdict.false or before.false, verdict.at)
            if (before.useful, before.note, before.real, before.false) == (
                    verdict.useful, verdict.note, verdict.real, verdict.false):
                return before, False
        scope = None if access.collections is None else json.dumps(list(access.collections))
        await tx.execute(
            "INSERT INTO verdicts (call, at, useful, note, real, false_claims, key_name, scope)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (verdict.call, verdict.at, int(verdict.useful), verdict.note, json.dumps(list(verdict.real)),
             json.dumps(list(verdict.false)), access.key_name, scope),
        )
    return verdict, True


async def pending(db: Reader, calls: list[str], *, access: Access) -> list[str]:
    """Of these call ids, the answered panel seats (ok or empty) with no verdict yet, in order; only
    seats of collections ``access`` may use (the others are left out, never named)."""
    if not calls:
        return []
    wanted = list(dict.fromkeys(calls))
    marks = placeholders(wanted)
    rows = await db.fetchall(
        f"SELECT s.call, p.collection FROM seats s JOIN panels p ON p.id = s.panel"
        f" WHERE s.call IN ({marks}) AND s.status IN ('ok', 'empty')"
        f" AND s.call NOT IN (SELECT call FROM verdicts WHERE call IN ({marks}))", (*wanted, *wanted))
    found = {r[0] for r in rows if access.allows(r[1])}
    return [c for c in wanted if c in found]


async def record_counts(db: Database, collection: str, task: str | None = None, *,
                        access: Access) -> dict[str, dict[str, Any]]:
    """Per alias: useful, notUseful, judged, lastAt, from the latest verdict on each of the collection's
    panel seats and route conversations; 403 when ``access`` may not use the collection."""
    if not access.allows(collection):
        raise Forbidden(f"gateway key {access.key_name!r} may read the record of {_scope_of(access)} only")
    rows = await db.fetchall(
        "SELECT c.alias, v.useful, v.note, v.at FROM verdicts v"
        " JOIN (SELECT call, MAX(id) AS id FROM verdicts GROUP BY call) last ON last.id = v.id"
        " JOIN (SELECT s.call, s.alias FROM seats s JOIN panels p ON p.id = s.panel WHERE p.collection = ?"
        "       UNION ALL SELECT call, alias FROM route_calls WHERE collection = ?) c ON c.call = v.call",
        (collection, collection))
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        if task and task.lower() not in (read_text(row["note"], db.dialect) or "").lower():
            continue
        entry = out.setdefault(row["alias"], {"useful": 0, "notUseful": 0, "judged": 0, "lastAt": None})
        entry["judged"] += 1
        entry["useful" if row["useful"] else "notUseful"] += 1
        entry["lastAt"] = max(entry["lastAt"] or 0, row["at"])
    return out


async def useful_counts(db: Database, aliases: list[str], shape: str | None = None) -> dict[str, tuple[int, int]]:
    """Per alias: (useful, judged) across every panel, optionally on one shape."""
    if not aliases:
        return {}
    marks = placeholders(aliases)
    params: list[Any] = list(aliases)
    shape_sql = ""
    if shape:
        shape_sql, params = " AND p.shape = ?", [*params, shape]
    rows = await db.fetchall(
        "SELECT s.alias, SUM(v.useful), COUNT(*) FROM verdicts v"
        " JOIN (SELECT call, MAX(id) AS id FROM verdicts GROUP BY call) last ON last.id = v.id"
        f" JOIN seats s ON s.call = v.call JOIN panels p ON p.id = s.panel WHERE s.alias IN ({marks}){shape_sql}"
        " GROUP BY s.alias", params)
    return {r[0]: (int(r[1] or 0), int(r[2])) for r in rows}
