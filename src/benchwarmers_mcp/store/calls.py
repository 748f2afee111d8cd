"""Panels and their seats. A seat is written the moment it finishes, before anyone is told."""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from benchwarmers_mcp.store.db import Database, Reader, Row
from benchwarmers_mcp.store.portable import read_text


def new_panel_id(now: float | None = None) -> str:
    """``p<YYYYMMDD>-<HHMMSS>-<4 hex>`` in UTC."""
    stamp = datetime.fromtimestamp(now or time.time(), UTC).strftime("%Y%m%d-%H%M%S")
    return f"p{stamp}-{secrets.token_hex(2)}"


@dataclass
class SeatRecord:
    call: str
    panel: str
    seat: str
    label: str
    alias: str
    status: str
    seconds: float
    answer: str = ""
    error: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    at: float = field(default_factory=time.time)

    def as_dict(self) -> dict[str, Any]:
        return {"call": self.call, "seat": self.label, "alias": self.alias, "status": self.status,
                "seconds": round(self.seconds, 2), "answer": self.answer, "error": self.error}


@dataclass
class PanelRecord:
    id: str
    at: float
    collection: str
    shape: str
    shape_by: str
    reply: str
    key_name: str
    system: str | None
    prompt: str
    skipped: list[dict[str, str]]
    note: str | None = None


async def create_panel(db: Database, panel: PanelRecord) -> str:
    """Insert the panel row. Four hex digits give 65,536 ids a second, so a busy gateway meets a
    taken one now and then: it draws again (``panel.id`` is updated) rather than failing."""
    while True:
        written = await db.write(
            "INSERT INTO panels (id, at, collection, shape, shape_by, reply, key_name, system, prompt, skipped, note)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
            (panel.id, panel.at, panel.collection, panel.shape, panel.shape_by, panel.reply, panel.key_name,
             panel.system, panel.prompt, json.dumps(panel.skipped), panel.note),
        )
        if written:
            return panel.id
        panel.id = new_panel_id(panel.at)


async def set_panel_note(db: Database, panel_id: str, reply: str, note: str | None) -> None:
    await db.write("UPDATE panels SET reply = ?, note = ? WHERE id = ?", (reply, note, panel_id))


async def record_seat(db: Database, seat: SeatRecord) -> None:
    """The seat row, committed before anyone is told (whole, even if the panel is cancelled
    meanwhile: ``Database.record``); a trigger moves the model's last use with it."""
    await db.record(
        "INSERT INTO seats (call, panel, seat, label, alias, status, seconds, answer, error, tokens_in,"
        " tokens_out, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (seat.call, seat.panel, seat.seat, seat.label, seat.alias, seat.status, seat.seconds, seat.answer,
         seat.error, seat.tokens_in, seat.tokens_out, seat.at),
    )


def _panel(row: Row, dialect: str) -> PanelRecord:
    return PanelRecord(row["id"], row["at"], row["collection"], row["shape"], row["shape_by"], row["reply"],
                       row["key_name"], read_text(row["system"], dialect), read_text(row["prompt"], dialect),
                       json.loads(row["skipped"]), read_text(row["note"], dialect))


async def panel(db: Database, panel_id: str) -> PanelRecord | None:
    row = await db.fetchone("SELECT * FROM panels WHERE id = ?", (panel_id,))
    return None if row is None else _panel(row, db.dialect)


async def panels(db: Database) -> list[PanelRecord]:
    """Every panel, oldest first."""
    return [_panel(r, db.dialect) for r in await db.fetchall("SELECT * FROM panels ORDER BY at, id")]


async def seats_of(db: Reader, panel_id: str) -> list[SeatRecord]:
    """A panel's seat rows as written (answers and errors exactly as the models gave them), in the
    order they finished."""
    rows = await db.fetchall("SELECT call, panel, seat, label, alias, status, seconds, answer, error, tokens_in,"
                             " tokens_out, at FROM seats WHERE panel = ? ORDER BY at, call", (panel_id,))
    return [SeatRecord(r["call"], r["panel"], r["seat"], r["label"], r["alias"], r["status"], r["seconds"],
                       read_text(r["answer"], db.dialect), read_text(r["error"], db.dialect), r["tokens_in"],
                       r["tokens_out"], r["at"]) for r in rows]


async def seat_counts(db: Database) -> dict[str, int]:
    """Per alias: the seats it has sat (merger seats included), over every panel."""
    return {r[0]: int(r[1]) for r in await db.fetchall("SELECT alias, COUNT(*) FROM seats GROUP BY alias")}
