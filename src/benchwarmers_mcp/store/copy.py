"""A SQLite store copied whole into a PostgreSQL database (``benchwarmers store copy --to ...``).

The destination's schema is made by the same migrations (opening it does that); then every table
the user's history is in goes across in ``ORDER`` (a row after the rows it points at), in batches
of ``BATCH`` rows read by rowid, each batch one transaction with ``ON CONFLICT DO NOTHING``. Ids
are kept as they are, and each identity column's sequence is moved past the largest afterwards.

Resumable: a ``store_copy`` row in the destination's settings names the source; a copy that was
stopped part way (killed, a dropped connection) is run again and goes on, the rows already there
skipped. A destination that holds rows and no such row (or another source's) is refused. Left out
(``LEFT_OUT``): what the destination makes for itself, and per-process state.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from benchwarmers_mcp.store.db import Database

BATCH = 500
MARK = "store_copy"
LEFT_OUT = {
    "migrations": "made by the destination's own migrations",
    "events": "the live feed: the destination's triggers write its own",
    "config_version": "a stamp the destination's triggers keep",
    "health_tally": "made again by the destination's triggers from the seats and route turns",
    "replicas": "the servers on a store: each registers itself",
    "leases": "per-process", "inflight": "per-process", "suite_leases": "per-process",
}
# parents before the rows that point at them; every other table after these, by name
ORDER = ("endpoints", "models", "collections", "collection_members", "panels", "seats", "suite_runs", "suite_items")


class CopyRefused(Exception):
    """Why the copy cannot start or go on, in one sentence."""


@dataclass
class Copied:
    tables: dict[str, tuple[int, int]] = field(default_factory=dict)  # table -> (source rows, destination rows)
    resumed: bool = False

    @property
    def unequal(self) -> list[str]:
        return [t for t, (a, b) in self.tables.items() if a != b]


async def source_tables(db: Database) -> list[str]:
    names = {r[0] for r in await db.fetchall("SELECT name FROM sqlite_master WHERE type = 'table'"
                                             " AND name NOT LIKE 'sqlite_%'")}
    kept = sorted(names - set(LEFT_OUT))
    return [t for t in ORDER if t in kept] + [t for t in kept if t not in ORDER]


async def _columns(db: Database, table: str) -> list[str]:
    if db.dialect == "postgresql":
        rows = await db.fetchall("SELECT column_name FROM information_schema.columns WHERE table_name = ?"
                                 " ORDER BY ordinal_position", (table,))
    else:
        rows = await db.fetchall(f"SELECT name FROM pragma_table_info('{table}')")
    return [r[0] for r in rows]


async def _count(db: Database, table: str) -> int:
    return int(await db.fetchval(f"SELECT COUNT(*) FROM {table}"))


async def _start(source_label: str, dest: Database, tables: list[str]) -> bool:
    """Whether this goes on with a copy from the same source; refused for a destination in use."""
    raw = await dest.fetchval("SELECT value FROM settings WHERE name = ?", (MARK,))
    if raw is not None:
        mark = json.loads(raw)
        if mark.get("source") != source_label:
            raise CopyRefused(f"the destination holds a copy of another store ({mark.get('source')}); "
                              "copy into an empty database")
        return True
    for table in tables:
        if await _count(dest, table):
            raise CopyRefused(f"the destination is not empty (its {table} has rows): copy into an empty database")
    await dest.write("INSERT INTO settings (name, value) VALUES (?, ?)",
                     (MARK, json.dumps({"source": source_label, "started": time.time(), "done": False})))
    return False


async def copy(source: Database, dest: Database, source_label: str, *,
               progress: Callable[[str, int], None] = lambda table, rows: None) -> Copied:
    """Every table but ``LEFT_OUT`` from ``source`` (SQLite) into ``dest``; each table's rows on both
    sides counted at the end. ``progress(table, rows so far)`` after each batch committed."""
    tables = await source_tables(source)
    done = Copied(resumed=await _start(source_label, dest, tables))
    for table in tables:
        columns = await _columns(source, table)
        missing = set(columns) - set(await _columns(dest, table))
        if missing:
            raise CopyRefused(f"the destination's {table} has no column {', '.join(sorted(missing))}: "
                              "a newer store than this version; upgrade first")
        names = ", ".join(columns)
        insert = (f"INSERT INTO {table} ({names}) VALUES ({', '.join('?' for _ in columns)})"
                  " ON CONFLICT DO NOTHING")
        last, moved = 0, 0
        while True:
            rows = await source.fetchall(f"SELECT rowid, {names} FROM {table} WHERE rowid > ? ORDER BY rowid LIMIT ?",
                                         (last, BATCH))
            if not rows:
                break
            async with dest.transaction() as tx:
                await tx.executemany(insert, [tuple(row)[1:] for row in rows])
            last, moved = rows[-1][0], moved + len(rows)
            progress(table, moved)
        sequence = await dest.fetchval("SELECT pg_get_serial_sequence(?, 'id')", (table,)) \
            if "id" in columns and dest.dialect == "postgresql" else None
        if sequence:  # an identity column: its next id after the largest copied
            await dest.fetchval(f"SELECT setval(?, COALESCE((SELECT MAX(id) FROM {table}), 0) + 1, false)",
                                (sequence,))
    for table in tables:  # the destination's settings hold the copy's own mark besides
        done.tables[table] = (await _count(source, table), await _count(dest, table) - (table == "settings"))
    return done


async def finish(dest: Database, source_label: str) -> None:
    """The copy's mark says it is done (a later run compares again and copies nothing)."""
    await dest.write("UPDATE settings SET value = ? WHERE name = ?",
                     (json.dumps({"source": source_label, "finished": time.time(), "done": True}), MARK))


__all__ = ["BATCH", "LEFT_OUT", "MARK", "ORDER", "CopyRefused", "Copied", "copy", "finish", "source_tables"]
