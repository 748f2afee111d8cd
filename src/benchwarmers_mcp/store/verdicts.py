"""Verdicts: append-only; the latest line per call is the verdict, every line its history.

**A new verdict replaces the last one whole**: its useful, note, real and false claims are what it
says (a blank note is blank, an empty list clears); the same verdict twice writes nothing. A line
may hold claim marks only (``useful`` NULL): marking a claim on a seat nobody judged yet
(``mark``). A seat is *owed* a verdict while its status is an answered one (``ANSWERED``), its panel's texts
are kept (not pruned) and its latest line has no ``useful`` (``owed``: one definition, in SQL); an
errored seat is never owed and can never be judged useful (400).

``is_latest`` is the one reading of "the latest line on a call" every module uses (SQL on the
``verdicts`` row it names; the ``verdicts_call`` index answers it).

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
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from benchwarmers_mcp.errors import BadRequest, Forbidden, NotFound
from benchwarmers_mcp.store.db import Database, Reader, Row, Transaction, placeholders
from benchwarmers_mcp.store.portable import read_text

if TYPE_CHECKING:  # context imports the store; the store only calls an Access's methods
    from benchwarmers_mcp.context import Access

ANSWERED = ("ok", "empty")
JUDGEMENTS = ("real", "false", "none")  # what a claim may be marked
TURN_CALL = re.compile(r"^(?P<conversation>r\d{8}-\d{6}-[0-9a-f]{4})\.t(?P<turn>\d{1,9})$")


def is_latest(v: str = "v") -> str:
    """SQL: the ``verdicts`` row named ``v`` is the latest line on its call (the verdict itself)."""
    return f"{v}.id = (SELECT MAX(l.id) FROM verdicts l WHERE l.call = {v}.call)"


def owed(seat: str = "s") -> str:
    """SQL: the ``seats`` row named ``seat`` is owed a verdict: it answered, its texts are kept (not
    pruned: there is something to judge), and its latest line, if any, has no ``useful``
    (``seats.judged``, which a trigger sets with each line). The terms are the partial index
    ``seats_owed``'s, word for word, so a count reads that index alone."""
    answered = ", ".join(f"'{s}'" for s in ANSWERED)
    return f"({seat}.status IN ({answered}) AND {seat}.judged = 0 AND {seat}.pruned_at IS NULL)"


def in_reach(access: Access, column: str = "p.collection") -> tuple[str, list[str]]:
    """SQL keeping the rows whose qualified collection (``column``: ``bench/<name>``, as panels and
    route conversations store it) ``access`` may use, and its parameters: ``Access.allows`` (the
    one definition of a key's collections) put in SQL, so a list can filter, page and count in the
    store. Every row when unscoped; none for a key of no collection."""
    if access.collections is None:
        return "1 = 1", []
    if not access.collections:
        return "1 = 0", []
    names = [f"bench/{c}" for c in access.collections]
    return f"{column} IN ({placeholders(names)})", names


def refuse_outside(access: Access, what: str, collection: str, verb: str = "judge") -> None:
    """403 when ``access`` may not use ``collection`` (which is not named: a 403 never says whether
    ``what`` exists, or where)."""
    if not access.allows(collection):
        raise Forbidden(f"{what} is not one this gateway key may {verb}: key {access.key_name!r} "
                        f"covers only {_scope_of(access)}")


def turn_call(conversation: str, turn: int) -> str:
    """A route turn's own call id: ``<conversation>.t<turn>``."""
    return f"{conversation}.t{turn}"


@dataclass(frozen=True)
class Verdict:
    call: str
    useful: bool | None  # None: a line of claim marks only
    note: str = ""
    real: tuple[str, ...] = ()
    false: tuple[str, ...] = ()
    at: float = field(default_factory=time.time)

    def as_dict(self) -> dict[str, Any]:
        return {"call": self.call, "useful": self.useful, "note": self.note, "real": list(self.real),
                "false": list(self.false), "at": self.at}

    def same_as(self, other: Verdict | None) -> bool:
        return other is not None and (self.useful, self.note, self.real, self.false) == (
            other.useful, other.note, other.real, other.false)


@dataclass(frozen=True)
class Mark:
    """A claim marked on one call: the call's own wording(s) of it, and ``real``, ``false`` or
    ``none`` (off both lists)."""

    call: str
    texts: tuple[str, ...]
    judgement: str


def marked(before: Verdict, marks: Iterable[Mark]) -> Verdict:
    """``before`` with each mark applied: its wording moved into the list it names (out of the
    other), or out of both for ``none``; everything else kept."""
    real, false = list(before.real), list(before.false)
    for mark in marks:
        real = [c for c in real if c not in mark.texts]
        false = [c for c in false if c not in mark.texts]
        if mark.judgement == "real":
            real += list(mark.texts)
        elif mark.judgement == "false":
            false += list(mark.texts)
    return replace(before, real=tuple(dict.fromkeys(real)), false=tuple(dict.fromkeys(false)))


async def call_target(db: Reader, call: str) -> dict[str, Any] | None:
    """What a call id points at: a panel seat (or merger), a route conversation's member, one route
    turn (``<conversation>.t<turn>``), or a shadow answer."""
    row = await db.fetchone(
        "SELECT s.alias, s.status, s.label, p.collection, p.shape, p.id AS panel FROM seats s"
        " JOIN panels p ON p.id = s.panel WHERE s.call = ?", (call,))
    if row is not None:
        return {"alias": row["alias"], "status": row["status"], "seat": row["label"],
                "collection": row["collection"], "shape": row["shape"], "panel": row["panel"]}
    turn = TURN_CALL.match(call)
    if turn is not None:
        row = await db.fetchone(
            "SELECT t.alias, t.status, c.collection FROM route_turns t JOIN route_conversations c"
            " ON c.id = t.conversation WHERE t.turn_call = ?", (call,))
        if row is not None and row["alias"] is not None:
            return {"alias": row["alias"], "status": row["status"], "seat": "turn", "collection": row["collection"],
                    "shape": "route"}
        return None
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

    def as_dict(self) -> dict[str, Any]:
        return {**self.verdict.as_dict(), "key_name": self.key_name}


def _useful(value: Any) -> bool | None:
    return None if value is None else bool(value)


def _verdict(row: Row, dialect: str) -> Verdict:
    return Verdict(row["call"], _useful(row["useful"]), read_text(row["note"], dialect), tuple(json.loads(row["real"])),
                   tuple(json.loads(row["false_claims"])), row["at"])


def _line(row: Row, dialect: str) -> VerdictLine:
    return VerdictLine(_verdict(row, dialect), row["key_name"], None if row["scope"] is None else tuple(json.loads(row["scope"])))


async def latest(db: Reader, call: str) -> Verdict | None:
    row = await db.fetchone("SELECT * FROM verdicts WHERE call = ? ORDER BY id DESC LIMIT 1", (call,))
    return None if row is None else _verdict(row, db.dialect)


async def latest_of(db: Reader, calls: Iterable[str]) -> dict[str, VerdictLine]:
    """The latest line on each of ``calls`` that has one."""
    wanted = list(dict.fromkeys(calls))
    if not wanted:
        return {}
    rows = await db.fetchall(f"SELECT * FROM verdicts v WHERE v.call IN ({placeholders(wanted)}) AND {is_latest()}",
                             wanted)
    return {r["call"]: _line(r, db.dialect) for r in rows}


async def log(db: Reader, call: str | None = None) -> list[VerdictLine]:
    """Every line of the verdict log (or one call's), in the order written."""
    if call is None:
        rows = await db.fetchall("SELECT * FROM verdicts ORDER BY id")
    else:
        rows = await db.fetchall("SELECT * FROM verdicts WHERE call = ? ORDER BY id", (call,))
    return [_line(r, db.dialect) for r in rows]


async def histories(db: Reader, calls: Iterable[str]) -> dict[str, list[VerdictLine]]:
    """Each call's lines, oldest first (a call with none is left out)."""
    wanted = list(dict.fromkeys(calls))
    if not wanted:
        return {}
    out: dict[str, list[VerdictLine]] = {}
    for row in await db.fetchall(f"SELECT * FROM verdicts WHERE call IN ({placeholders(wanted)}) ORDER BY id",
                                 wanted):
        out.setdefault(row["call"], []).append(_line(row, db.dialect))
    return out


def _scope_of(access: Access) -> str:
    return ", ".join(f"bench/{c}" for c in access.collections or ())


async def _target(tx: Reader, call: str, access: Access) -> dict[str, Any]:
    target = await call_target(tx, call)
    if target is None:
        raise NotFound(f"no call with id {call!r}")
    refuse_outside(access, f"call {call!r}", target["collection"])
    return target


def _check_useful(verdict: Verdict, target: dict[str, Any]) -> None:
    if verdict.useful and target["status"] not in ANSWERED:
        raise BadRequest(f"call {verdict.call!r} did not answer (its status is {target['status']}): an errored "
                         "seat cannot be judged useful; judge it not useful, or leave it")


async def _write(tx: Transaction, verdict: Verdict, before: Verdict | None, access: Access) -> bool:
    """Insert ``verdict`` as its call's newest line, unless it says what ``before`` (the latest) does."""
    if verdict.same_as(before):
        return False
    scope = None if access.collections is None else json.dumps(list(access.collections))
    await tx.execute(
        "INSERT INTO verdicts (call, at, useful, note, real, false_claims, key_name, scope)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (verdict.call, verdict.at, None if verdict.useful is None else int(verdict.useful), verdict.note,
         json.dumps(list(verdict.real)), json.dumps(list(verdict.false)), access.key_name, scope))
    return True


async def record(db: Database, verdict: Verdict, *, access: Access, marks: Iterable[Mark] = ()
                 ) -> tuple[Verdict, bool]:
    """Record a verdict for the caller ``access``: it replaces the call's last one whole. 404 for
    an unknown call, 403 for a call of a collection the caller may not use, 400 for "useful" on a
    call that did not answer. ``marks`` (claims marked with it, on this call or on other seats of
    its panel) are applied on top, each other call getting a line of its own (``mark``). Returns
    (this call's verdict, written).

    Every check against the latest lines and every insert run in one write transaction, which
    every writer of every process takes in turn: the same verdict sent twice at once writes one line."""
    by_call: dict[str, list[Mark]] = {}
    for m in marks:
        by_call.setdefault(m.call, []).append(m)
    async with db.transaction() as tx:
        target = await _target(tx, verdict.call, access)
        _check_useful(verdict, target)
        before = await latest(tx, verdict.call)
        mine = marked(verdict, by_call.pop(verdict.call, ()))
        written = await _write(tx, mine, before, access)
        await _mark(tx, by_call, access, verdict.at)
    return (mine if written or before is None else before), written


async def mark(db: Database, marks: Iterable[Mark], *, access: Access, at: float | None = None
               ) -> dict[str, tuple[Verdict, bool]]:
    """Claim marks, in ONE transaction: each call named gets a new line that is its latest line
    with the marks applied (``useful``, note and the rest kept; NULL useful when it had none), or
    no line when nothing changes. Returns each call's verdict and whether it was written."""
    by_call: dict[str, list[Mark]] = {}
    for m in marks:
        by_call.setdefault(m.call, []).append(m)
    async with db.transaction() as tx:
        return await _mark(tx, by_call, access, time.time() if at is None else at)


async def _mark(tx: Transaction, by_call: Mapping[str, list[Mark]], access: Access, at: float
                ) -> dict[str, tuple[Verdict, bool]]:
    out: dict[str, tuple[Verdict, bool]] = {}
    for call, marks in by_call.items():
        await _target(tx, call, access)
        before = await latest(tx, call)
        after = replace(marked(before or Verdict(call, None), marks), at=at)
        written = await _write(tx, after, before, access)
        out[call] = (after if written or before is None else before), written
    return out


async def pending(db: Reader, calls: list[str], *, access: Access) -> list[str]:
    """Of these call ids, the panel seats owed a verdict (``owed``), in order; only seats of
    collections ``access`` may use (the others are left out, never named)."""
    if not calls:
        return []
    wanted = list(dict.fromkeys(calls))
    rows = await db.fetchall(
        f"SELECT s.call, p.collection FROM seats s JOIN panels p ON p.id = s.panel"
        f" WHERE s.call IN ({placeholders(wanted)}) AND {owed()}", wanted)
    found = {r[0] for r in rows if access.allows(r[1])}
    return [c for c in wanted if c in found]


# Every judged route call with its model and collection: a member's calls and its turns' own.
ROUTE_CALLS = (
    "SELECT call, alias, collection FROM route_calls"
    " UNION ALL SELECT t.turn_call, t.alias, c.collection FROM route_turns t"
    " JOIN route_conversations c ON c.id = t.conversation WHERE t.turn_call IS NOT NULL AND t.alias IS NOT NULL")
# Every judged call with its model and collection: panel seats, then the route calls.
JUDGED_CALLS = f"SELECT s.call, s.alias, p.collection FROM seats s JOIN panels p ON p.id = s.panel UNION ALL {ROUTE_CALLS}"


async def record_counts(db: Database, collection: str, task: str | None = None, *,
                        access: Access) -> dict[str, dict[str, Any]]:
    """Per alias: useful, notUseful, judged, lastAt, from the latest verdict on each of the collection's
    panel seats, route calls and route turns (lines of claim marks alone are not judgements); 403
    when ``access`` may not use the collection."""
    if not access.allows(collection):
        raise Forbidden(f"gateway key {access.key_name!r} may read the record of {_scope_of(access)} only")
    rows = await db.fetchall(
        f"SELECT c.alias, v.useful, v.note, v.at FROM verdicts v JOIN ({JUDGED_CALLS}) c ON c.call = v.call"
        f" WHERE c.collection = ? AND v.useful IS NOT NULL AND {is_latest()}", (collection,))
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
        "SELECT s.alias, SUM(v.useful), COUNT(v.useful) FROM verdicts v"
        f" JOIN seats s ON s.call = v.call JOIN panels p ON p.id = s.panel WHERE s.alias IN ({marks}){shape_sql}"
        f" AND {is_latest()} GROUP BY s.alias", params)
    return {r[0]: (int(r[1] or 0), int(r[2])) for r in rows}
