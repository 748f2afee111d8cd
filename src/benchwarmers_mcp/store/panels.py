"""Panels to judge: the list (newest first, filtered, with the owed seats counted), one panel with
its texts and every seat's verdict and history, a route conversation with its turns, and the count
of seats owed a verdict (the sidebar's, on every page).

Scope as ``store/verdicts.py``: every function takes the caller's ``Access`` (no default). A list
holds only the collections the caller may use (another collection's panels are left out, never
named); one panel or conversation of another collection is 403, an unknown one 404; the 403 never
says whether it exists.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from benchwarmers_mcp.errors import BadRequest, NotFound
from benchwarmers_mcp.store import verdicts
from benchwarmers_mcp.store.db import Reader, Row, placeholders
from benchwarmers_mcp.store.portable import read_text
from benchwarmers_mcp.store.verdicts import VerdictLine, in_reach, is_latest, owed, refuse_outside

if TYPE_CHECKING:
    from benchwarmers_mcp.context import Access

PREVIEW = 160  # characters of a prompt a list shows, on one line
MOST = 200  # panels a list gives at most
SOURCES = ("dashboard", "cli", "gateway", "mcp")


@dataclass(frozen=True)
class PanelFilter:
    """Which panels a list holds: only those with an owed seat, of one collection (qualified), asked
    from one source, where one model sat (with ``owed``: where its seat is owed), asked before the
    panel ``before`` (the previous page's ``next``), at most ``limit``."""

    owed: bool = False
    collection: str | None = None
    source: str | None = None
    model: str | None = None
    before: str | None = None
    limit: int = 50


def seat_order(seat: dict[str, Any]) -> tuple[bool, bool, str]:
    """Members, then explorers, then the merger (by seat key)."""
    key = str(seat["key"])
    return key == "merger", key.startswith("explorer"), key


def preview(text: str) -> str:
    """A prompt's opening on one line, at most ``PREVIEW`` characters."""
    line = " ".join(text.split())
    return line if len(line) <= PREVIEW else line[:PREVIEW - 1] + "…"


def _filters(f: PanelFilter, access: Access) -> tuple[list[str], list[Any], list[str], list[Any]]:
    """SQL on the panel (``p``) and on a seat of it (``s``) for ``f``, each with its parameters."""
    scope, names = in_reach(access)
    panel, panel_params = [scope], list(names)
    if f.collection:
        panel.append("p.collection = ?")
        panel_params.append(f.collection)
    if f.source:
        panel.append("p.source = ?")
        panel_params.append(f.source)
    seat: list[str] = []
    seat_params: list[Any] = []
    if f.model:
        seat.append("s.alias = ?")
        seat_params.append(f.model)
    if f.owed:
        seat.append(owed())
    return panel, panel_params, seat, seat_params


async def seats_of(db: Reader, panel_ids: list[str], *, answers: bool = False) -> dict[str, list[dict[str, Any]]]:
    """Each panel's seats in seat order: call, seat (label), key, alias, status, seconds, tokens,
    useful (the latest line's: true, false or None) and owed; with ``answers``, the answer and error."""
    if not panel_ids:
        return {}
    texts = ", s.answer, s.error" if answers else ""
    rows = await db.fetchall(
        "SELECT s.panel, s.call, s.seat, s.label, s.alias, s.status, s.seconds, s.tokens_in, s.tokens_out, s.at,"
        f" v.useful, CASE WHEN {owed()} THEN 1 ELSE 0 END AS owed{texts}"
        f" FROM seats s JOIN panels p ON p.id = s.panel LEFT JOIN verdicts v ON v.call = s.call AND {is_latest()}"
        f" WHERE s.panel IN ({placeholders(panel_ids)}) ORDER BY s.at", panel_ids)
    out: dict[str, list[dict[str, Any]]] = {p: [] for p in panel_ids}
    for r in rows:
        seat = {"call": r["call"], "seat": r["label"], "key": r["seat"], "alias": r["alias"], "status": r["status"],
                "seconds": round(r["seconds"], 2), "tokens_in": r["tokens_in"], "tokens_out": r["tokens_out"],
                "useful": None if r["useful"] is None else bool(r["useful"]), "owed": bool(r["owed"])}
        if answers:
            seat["answer"], seat["error"] = read_text(r["answer"], db.dialect), read_text(r["error"], db.dialect)
        out[r["panel"]].append(seat)
    for seats in out.values():
        seats.sort(key=seat_order)
    return out


def _opening(dialect: str) -> str:
    """SQL: the first characters of ``p.prompt``, enough for a preview. SQLite's text functions stop
    at a NUL, so there the bytes are cut (``_opened`` decodes them); PostgreSQL's text never holds one
    (``portable.stored_text``)."""
    if dialect == "sqlite":
        return f"SUBSTR(CAST(p.prompt AS BLOB), 1, {PREVIEW * 4})"
    return f"SUBSTR(p.prompt, 1, {PREVIEW * 4})"


def _opened(value: Any, dialect: str) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "ignore")  # a character cut at the end is dropped
    return str(read_text(value, dialect) or "")


def _panel(r: Row) -> dict[str, Any]:
    return {"id": r["id"], "at": r["at"], "collection": r["collection"], "shape": r["shape"], "reply": r["reply"],
            "source": r["source"], "client": r["client"], "asked_by": r["key_name"]}


async def listing(db: Reader, f: PanelFilter, *, access: Access) -> dict[str, Any]:
    """The panels ``f`` keeps, newest first, each with its seats and owed count; ``owed_total``, the
    seats owed a verdict under the same filters (every page's); ``next``, the ``before`` of the next
    page (None on the last). 400 when ``before`` names no panel the caller can see."""
    panel, params, seat, seat_params = _filters(f, access)
    page, page_params = list(panel), list(params)
    if seat:
        page.append("EXISTS (SELECT 1 FROM seats s WHERE s.panel = p.id AND " + " AND ".join(seat) + ")")
        page_params += seat_params
    if f.before:
        scope, names = in_reach(access)
        at = await db.fetchval(f"SELECT p.at FROM panels p WHERE p.id = ? AND {scope}", (f.before, *names))
        if at is None:
            raise BadRequest(f"before: no panel {f.before!r} to list from")
        page.append("(p.at < ? OR (p.at = ? AND p.id < ?))")
        page_params += [at, at, f.before]
    rows = await db.fetchall(
        "SELECT p.id, p.at, p.collection, p.shape, p.reply, p.source, p.client, p.key_name,"
        f" {_opening(db.dialect)} AS opening FROM panels p WHERE {' AND '.join(page)}"
        " ORDER BY p.at DESC, p.id DESC LIMIT ?", (*page_params, f.limit + 1))
    more = len(rows) > f.limit
    rows = rows[:f.limit]
    seats = await seats_of(db, [r["id"] for r in rows])
    out = []
    for r in rows:
        entry = _panel(r)
        entry["prompt_preview"] = preview(_opened(r["opening"], db.dialect))
        entry["seats"] = seats[r["id"]]
        entry["owed"] = sum(s["owed"] for s in entry["seats"])
        out.append(entry)
    counted = [*panel, *(["s.alias = ?"] if f.model else []), owed()]
    total = await db.fetchval(f"SELECT COUNT(*) FROM seats s JOIN panels p ON p.id = s.panel WHERE {' AND '.join(counted)}",
                              (*params, *([f.model] if f.model else [])))
    return {"panels": out, "owed_total": int(total or 0), "next": out[-1]["id"] if more else None}


async def owed_count(db: Reader, *, access: Access) -> int:
    """Seats owed a verdict in the collections ``access`` may use (the partial index ``seats_owed``
    alone for an unscoped caller)."""
    if access.collections is None:
        return int(await db.fetchval(f"SELECT COUNT(*) FROM seats s WHERE {owed()}") or 0)
    scope, names = in_reach(access)
    return int(await db.fetchval(
        f"SELECT COUNT(*) FROM seats s JOIN panels p ON p.id = s.panel WHERE {scope} AND {owed()}", names) or 0)


def _history(lines: list[VerdictLine]) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    shown = [line.as_dict() for line in lines]
    for line in shown:
        line.pop("call")
    return (shown[-1] if shown else None), shown


async def detail(db: Reader, panel_id: str, *, access: Access) -> dict[str, Any]:
    """One panel: ``panel`` (the list's fields, with its prompt, system text, note, what was skipped
    and ``pruned_at``) and ``seats`` (each with its answer, error, ``verdict``, the latest line,
    and ``history``, every line oldest first). 404 unknown, 403 outside the caller's collections."""
    row = await db.fetchone("SELECT * FROM panels WHERE id = ?", (panel_id,))
    if row is None:
        raise NotFound(f"no panel with id {panel_id!r}")
    refuse_outside(access, f"panel {panel_id!r}", row["collection"], "see")
    prompt = read_text(row["prompt"], db.dialect)
    panel = {**_panel(row), "prompt_preview": preview(prompt), "shape_by": row["shape_by"],
             "prompt": prompt, "system": read_text(row["system"], db.dialect) or "",
             "note": read_text(row["note"], db.dialect), "skipped": json.loads(row["skipped"] or "[]"), "pruned_at": row["pruned_at"]}
    seats = (await seats_of(db, [panel_id], answers=True))[panel_id]
    lines = await verdicts.histories(db, [s["call"] for s in seats])
    for seat in seats:
        seat["verdict"], seat["history"] = _history(lines.get(seat["call"], []))
    panel["owed"] = sum(s["owed"] for s in seats)
    return {"panel": panel, "seats": seats}


async def conversation(db: Reader, conversation_id: str, *, access: Access) -> dict[str, Any]:
    """One route conversation: ``conversation`` (collection, source, client, asked_by, member, turns,
    started, last) and ``turns`` in order (each with its own call id, member, status, seconds,
    tokens, tool calls, the members tried before it (``tried``), error, its prompt (the last user
    message) and answer, ``verdict`` and ``history``). 404 unknown, 403 outside the caller's collections."""
    row = await db.fetchone("SELECT * FROM route_conversations WHERE id = ?", (conversation_id,))
    if row is None:
        raise NotFound(f"no route conversation with id {conversation_id!r}")
    refuse_outside(access, f"conversation {conversation_id!r}", row["collection"], "see")
    head = {"id": row["id"], "collection": row["collection"], "source": row["source"], "client": row["client"],
            "asked_by": row["key_name"], "alias": row["alias"], "turns": row["turns"],
            "started_at": row["started_at"], "last_at": row["last_at"]}
    rows = await db.fetchall("SELECT * FROM route_turns WHERE conversation = ? ORDER BY turn, id", (conversation_id,))
    lines = await verdicts.histories(db, [r["turn_call"] for r in rows if r["turn_call"]])
    turns = []
    for r in rows:
        turn = {"turn": r["turn"], "call": r["turn_call"], "member_call": r["call"], "alias": r["alias"],
                "status": r["status"], "seconds": r["seconds"], "tokens_in": r["tokens_in"],
                "tokens_out": r["tokens_out"], "tool_calls": r["tool_calls"], "finish": r["finish"],
                "tried": json.loads(r["tried"] or "[]"), "error": read_text(r["error"], db.dialect),
                "prompt": read_text(r["prompt"], db.dialect), "answer": read_text(r["answer"], db.dialect), "pruned_at": r["pruned_at"], "at": r["at"]}
        turn["verdict"], turn["history"] = _history(lines.get(r["turn_call"], []) if r["turn_call"] else [])
        turns.append(turn)
    return {"conversation": head, "turns": turns}


async def answers(db: Reader, panel_id: str, *, access: Access) -> dict[str, tuple[str, str]]:
    """A panel's answered seats (the merger left out): seat key -> (call id, answer), what its claims
    are split from. 404 unknown, 403 outside the caller's collections."""
    collection = await db.fetchval("SELECT collection FROM panels WHERE id = ?", (panel_id,))
    if collection is None:
        raise NotFound(f"no panel with id {panel_id!r}")
    refuse_outside(access, f"panel {panel_id!r}", collection, "see")
    rows = await db.fetchall("SELECT seat, call, answer FROM seats WHERE panel = ? AND status = 'ok' AND seat <> 'merger'",
                             (panel_id,))
    return {r["seat"]: (r["call"], read_text(r["answer"], db.dialect)) for r in rows if r["answer"]}


async def panel_of(db: Reader, call: str) -> str | None:
    """The panel a seat's call id belongs to."""
    value = await db.fetchval("SELECT panel FROM seats WHERE call = ?", (call,))
    return None if value is None else str(value)
