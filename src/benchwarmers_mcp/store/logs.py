"""What happened, newest first, for the Logs page and ``GET /api/logs``: panels with their seats,
route conversations with their turns summed up, and the change log. Never a prompt, an answer
or a first message: only who, when, how and how it was judged."""

from __future__ import annotations

import json
from typing import Any

from benchwarmers_mcp.store.db import Database, placeholders
from benchwarmers_mcp.store.portable import read_text

LATEST_VERDICT = "SELECT call, MAX(id) AS id FROM verdicts GROUP BY call"


async def panels(db: Database, limit: int = 200) -> list[dict[str, Any]]:
    """The newest panels, each with its seats in seat order and each seat's latest verdict."""
    rows = await db.fetchall(
        "SELECT id, at, collection, shape, shape_by, reply, key_name, skipped, note FROM panels"
        " ORDER BY at DESC, id DESC LIMIT ?", (limit,))
    out = {r["id"]: {"id": r["id"], "at": r["at"], "collection": r["collection"], "shape": r["shape"],
                     "shape_by": r["shape_by"], "reply": r["reply"], "asked_by": r["key_name"],
                     "skipped": json.loads(r["skipped"] or "[]"), "note": read_text(r["note"], db.dialect), "seats": [],
                     "owed": 0}
           for r in rows}
    if not out:
        return []
    marks = placeholders(out)
    seats = await db.fetchall(
        "SELECT s.panel, s.call, s.seat, s.label, s.alias, s.status, s.seconds, s.at, v.useful"
        f" FROM seats s LEFT JOIN ({LATEST_VERDICT}) last ON last.call = s.call"
        f" LEFT JOIN verdicts v ON v.id = last.id WHERE s.panel IN ({marks}) ORDER BY s.at", list(out))
    for s in seats:
        panel = out[s["panel"]]
        judged = s["useful"] is not None
        panel["seats"].append({"call": s["call"], "seat": s["label"], "key": s["seat"], "alias": s["alias"],
                               "status": s["status"], "seconds": round(s["seconds"], 2),
                               "judged": judged, "useful": None if not judged else bool(s["useful"])})
        if not judged and s["status"] in ("ok", "empty"):
            panel["owed"] += 1
    for panel in out.values():
        panel["seats"].sort(key=lambda s: (s["key"] == "merger", s["key"].startswith("explorer"), s["key"]))
    return list(out.values())


async def conversations(db: Database, limit: int = 200) -> list[dict[str, Any]]:
    """The newest route conversations: who answered, turns, tool calls, failovers, the last turn."""
    rows = await db.fetchall(
        "SELECT c.id, c.collection, c.key_name, c.alias, c.turns, c.started_at, c.last_at,"
        " COALESCE(SUM(t.tool_calls), 0) AS tool_calls,"
        " COALESCE(SUM(CASE WHEN t.tried <> '[]' THEN 1 ELSE 0 END), 0) AS failovers,"
        " COALESCE(SUM(t.tokens_in), 0) AS tokens_in, COALESCE(SUM(t.tokens_out), 0) AS tokens_out"
        " FROM route_conversations c LEFT JOIN route_turns t ON t.conversation = c.id"
        " GROUP BY c.id ORDER BY c.last_at DESC LIMIT ?", (limit,))
    out = [dict(r) for r in rows]
    if not out:
        return out
    marks = placeholders(out)
    last = await db.fetchall(
        "SELECT t.conversation, t.status, t.alias, t.seconds, t.finish FROM route_turns t"
        " JOIN (SELECT conversation, MAX(id) AS id FROM route_turns"
        f" WHERE conversation IN ({marks}) GROUP BY conversation) m ON m.id = t.id", [c["id"] for c in out])
    by_id = {r["conversation"]: dict(r) for r in last}
    for c in out:
        turn = by_id.get(c["id"])
        c["asked_by"] = c.pop("key_name")
        c["last_turn"] = None if turn is None else {k: turn[k] for k in ("status", "alias", "seconds", "finish")}
    return out


async def changes(db: Database, limit: int = 200) -> list[dict[str, Any]]:
    rows = await db.fetchall("SELECT id, at, what, subject, detail FROM changes ORDER BY id DESC LIMIT ?", (limit,))
    return [{"id": r["id"], "at": r["at"], "what": r["what"], "subject": r["subject"],
             "detail": json.loads(r["detail"] or "{}")} for r in rows]
