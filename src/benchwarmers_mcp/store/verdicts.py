"""Verdicts: append-only; the latest line per call wins; the same verdict twice writes nothing."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from benchwarmers_mcp.errors import NotFound
from benchwarmers_mcp.store.db import Database, Row, placeholders

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


async def call_target(db: Database, call: str) -> dict[str, Any] | None:
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
    """One line of the append-only verdict log: the verdict as stored, and the key that sent it."""

    verdict: Verdict
    key_name: str


def _verdict(row: Row) -> Verdict:
    return Verdict(row["call"], bool(row["useful"]), row["note"], tuple(json.loads(row["real"])),
                   tuple(json.loads(row["false_claims"])), row["at"])


async def latest(db: Database, call: str) -> Verdict | None:
    row = await db.fetchone("SELECT * FROM verdicts WHERE call = ? ORDER BY id DESC LIMIT 1", (call,))
    return None if row is None else _verdict(row)


async def log(db: Database, call: str | None = None) -> list[VerdictLine]:
    """Every line of the verdict log (or one call's), in the order written."""
    if call is None:
        rows = await db.fetchall("SELECT * FROM verdicts ORDER BY id")
    else:
        rows = await db.fetchall("SELECT * FROM verdicts WHERE call = ? ORDER BY id", (call,))
    return [VerdictLine(_verdict(r), r["key_name"]) for r in rows]


async def record(db: Database, verdict: Verdict, *, key_name: str = "local") -> tuple[Verdict, bool]:
    """Record a verdict. Blank note/real/false keep the earlier values. Returns (verdict, written)."""
    if await call_target(db, verdict.call) is None:
        raise NotFound(f"no call with id {verdict.call!r}")
    before = await latest(db, verdict.call)
    if before is not None:
        verdict = Verdict(verdict.call, verdict.useful, verdict.note or before.note,
                          verdict.real or before.real, verdict.false or before.false, verdict.at)
        if (before.useful, before.note, before.real, before.false) == (
                verdict.useful, verdict.note, verdict.real, verdict.false):
            return before, False
    await db.write(
        "INSERT INTO verdicts (call, at, useful, note, real, false_claims, key_name) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (verdict.call, verdict.at, int(verdict.useful), verdict.note, json.dumps(list(verdict.real)),
         json.dumps(list(verdict.false)), key_name),
    )
    return verdict, True


async def pending(db: Database, calls: list[str]) -> list[str]:
    """Of these call ids, the answered panel seats (ok or empty) with no verdict yet, in order."""
    if not calls:
        return []
    wanted = list(dict.fromkeys(calls))
    marks = placeholders(wanted)
    rows = await db.fetchall(
        f"SELECT call FROM seats WHERE call IN ({marks}) AND status IN ('ok', 'empty')"
        f" AND call NOT IN (SELECT call FROM verdicts WHERE call IN ({marks}))", (*wanted, *wanted))
    found = {r[0] for r in rows}
    return [c for c in wanted if c in found]


async def record_counts(db: Database, collection: str, task: str | None = None) -> dict[str, dict[str, Any]]:
    """Per alias: useful, notUseful, judged, lastAt, from the latest verdict on each of the collection's
    panel seats and route conversations."""
    rows = await db.fetchall(
        "SELECT c.alias, v.useful, v.note, v.at FROM verdicts v"
        " JOIN (SELECT call, MAX(id) AS id FROM verdicts GROUP BY call) last ON last.id = v.id"
        " JOIN (SELECT s.call, s.alias FROM seats s JOIN panels p ON p.id = s.panel WHERE p.collection = ?"
        "       UNION ALL SELECT call, alias FROM route_calls WHERE collection = ?) c ON c.call = v.call",
        (collection, collection))
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        if task and task.lower() not in (row["note"] or "").lower():
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
