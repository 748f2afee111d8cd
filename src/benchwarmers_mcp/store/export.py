"""The user's data as one versioned JSON-lines format, written and read back (``bench export``,
``benchwarmers import``, and on PostgreSQL ``benchwarmers backup``): docs/HOSTING.md describes it.

The first line is the header, ``{"format": "benchwarmers-export", "version": 1, ...}``; every other
line is one row, ``{"kind": "<table>", "row": {<column>: <value>, ...}}``, kinds in ``KINDS``'s
order (a row comes after the rows it points at). Values are JSON: numbers, text (exactly as
written, a NUL included), null. Left out: provider keys (they live in the config folder's key
store, never in the store), an endpoint's header values (one may hold a key: the names are kept,
each value empty, and the importing user sets them again), gateway keys, the usage ledger, the
live feed and every per-process table; and each model's health tally, which the store's triggers
make again from the seats and route turns as they go in (so the ratings' health evidence follows).

Import skips what is already there: a row whose key (``Kind.key``: its name or id) the store has.
Rows with a serial ``INTEGER`` id (verdicts, route turns, suite runs and results, alerts) are
matched on what makes them the same row in any store (``Kind.key``: a verdict's call and moment)
and given a new id when added; rows pointing at them (``Kind.refs``) are pointed at the new one.
So the same file imported twice changes nothing, and into a store with rows of its own, nothing
of either is lost. Rows go in batches, one transaction each.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from typing import Any

from benchwarmers_mcp.store.db import Database, Reader, Transaction
from benchwarmers_mcp.store.portable import read_text

FORMAT = "benchwarmers-export"
VERSION = 1
BATCH = 500


@dataclass(frozen=True)
class Kind:
    """One table as the format carries it."""

    table: str
    key: tuple[str, ...]  # the columns that make a row the same row in any store
    serial: bool = False  # an INTEGER ``id`` each store gives: matched on ``key``, given anew
    refs: dict[str, str] = field(default_factory=dict)  # column -> the serial kind whose id it holds
    since: str | None = None  # the condition ``--since`` keeps rows by (``?`` the moment)
    later: tuple[str, ...] = ()  # refs set once the rows they point at are in (a cycle)


_PANEL_SINCE = "panel IN (SELECT id FROM panels WHERE at >= ?)"
KINDS: tuple[Kind, ...] = (
    Kind("endpoints", ("name",)),
    Kind("models", ("alias",)),
    Kind("collections", ("name",)),
    Kind("collection_members", ("collection", "alias")),
    Kind("settings", ("name",)),
    Kind("model_facts", ("alias", "fact", "source")),
    Kind("panels", ("id",), since="at >= ?"),
    Kind("seats", ("call",), since=_PANEL_SINCE),
    Kind("verdicts", ("call", "at"), serial=True, since="at >= ?"),
    Kind("route_conversations", ("id",), since="last_at >= ?"),
    Kind("route_calls", ("call",), since="conversation IN (SELECT id FROM route_conversations WHERE last_at >= ?)"),
    Kind("route_turns", ("conversation", "turn", "at"), serial=True,
         since="conversation IN (SELECT id FROM route_conversations WHERE last_at >= ?)"),
    Kind("suite_repos", ("name",)),
    Kind("suite_runs", ("created_at", "origin"), serial=True, since="created_at >= ?"),
    Kind("suite_items", ("run", "seq"), serial=True, refs={"run": "suite_runs", "answer": "suite_answers"},
         since="run IN (SELECT id FROM suite_runs WHERE created_at >= ?)", later=("answer",)),
    Kind("suite_answers", ("run", "item", "alias", "at"), serial=True,
         refs={"run": "suite_runs", "item": "suite_items"},
         since="run IN (SELECT id FROM suite_runs WHERE created_at >= ?)"),
    Kind("alerts", ("kind", "subject", "at"), serial=True, since="at >= ?"),
)
BY_TABLE = {k.table: k for k in KINDS}


class BadExport(ValueError):
    """A file that is not an export this version reads: the line and what is wrong with it."""


def header(since: float | None, now: float) -> dict[str, Any]:
    return {"format": FORMAT, "version": VERSION, "exported_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
            "since": since, "kinds": [k.table for k in KINDS]}


def _row(kind: Kind, row: dict[str, Any], dialect: str) -> dict[str, Any]:
    out = {name: read_text(value, dialect) for name, value in row.items()}
    if kind.table == "endpoints" and out.get("headers"):
        out["headers"] = json.dumps(dict.fromkeys(json.loads(out["headers"]), ""))  # values may hold a key
    return out


async def rows(db: Reader, kind: Kind, since: float | None = None) -> AsyncIterator[dict[str, Any]]:
    """The kind's rows in key order (``since``: those its condition keeps), a batch at a time after
    the last key read (rows a running server adds meanwhile neither shift nor repeat one)."""
    where, params = ([], []) if since is None or kind.since is None else ([kind.since], [since])
    key = "id" if kind.serial else kind.key[0] if len(kind.key) == 1 else None
    if key is None:  # a small table keyed by several columns: read whole
        order = ", ".join(kind.key)
        sql = f"SELECT * FROM {kind.table}{' WHERE ' + where[0] if where else ''} ORDER BY {order}"
        for row in await db.fetchall(sql, tuple(params)):
            yield _row(kind, dict(row), db.dialect)
        return
    last: Any = None
    while True:
        conditions = where + ([f"{key} > ?"] if last is not None else [])
        sql = (f"SELECT * FROM {kind.table}{' WHERE ' + ' AND '.join(conditions) if conditions else ''}"
               f" ORDER BY {key} LIMIT ?")
        batch = await db.fetchall(sql, (*params, *([last] if last is not None else []), BATCH))
        for row in batch:
            yield _row(kind, dict(row), db.dialect)
        if len(batch) < BATCH:
            return
        last = batch[-1][key]


async def lines(db: Reader, since: float | None = None, now: float | None = None) -> AsyncIterator[str]:
    """The export, one JSON line at a time (each ending in a newline)."""
    yield json.dumps(header(since, time.time() if now is None else now)) + "\n"
    for kind in KINDS:
        async for row in rows(db, kind, since):
            yield json.dumps({"kind": kind.table, "row": row}, ensure_ascii=False) + "\n"


def parse(text_lines: Iterable[str]) -> Iterable[tuple[int, Kind, dict[str, Any]]]:
    """The rows of an export: (line number, kind, row); ``BadExport`` for anything else."""
    seen_header = False
    for number, line in enumerate(text_lines, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError as e:
            raise BadExport(f"line {number} is not JSON: {e}") from None
        if not seen_header:
            if not isinstance(item, dict) or item.get("format") != FORMAT:
                raise BadExport(f"line {number}: not a {FORMAT} file (its first line names the format)")
            if item.get("version") != VERSION:
                raise BadExport(f"line {number}: format version {item.get('version')!r}; this version reads {VERSION}")
            seen_header = True
            continue
        kind = BY_TABLE.get(str(item.get("kind"))) if isinstance(item, dict) else None
        row = item.get("row") if isinstance(item, dict) else None
        if kind is None or not isinstance(row, dict) or not row:
            raise BadExport(f"line {number}: not a row of a known kind ({', '.join(BY_TABLE)})")
        yield number, kind, row
    if not seen_header:
        raise BadExport(f"the file is empty: no {FORMAT} header")


@dataclass
class Imported:
    """What an import did, per kind: rows added and rows skipped (already there)."""

    added: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    ids: dict[str, dict[int, int]] = field(default_factory=dict)  # serial kind -> file id -> store id
    pending: list[tuple[Kind, int, str, int]] = field(default_factory=list)  # (kind, store id, column, file id)

    def count(self, kind: Kind, added: bool) -> None:
        into = self.added if added else self.skipped
        into[kind.table] = into.get(kind.table, 0) + 1


async def _columns(tx: Transaction, table: str) -> set[str]:
    if tx.dialect == "postgresql":
        found = await tx.fetchall("SELECT column_name FROM information_schema.columns WHERE table_name = ?", (table,))
    else:
        found = await tx.fetchall(f"SELECT name FROM pragma_table_info('{table}')")
    return {r[0] for r in found}


async def import_rows(db: Database, items: Iterable[tuple[int, Kind, dict[str, Any]]]) -> Imported:
    """Read an export's rows (``parse``) into the store, skipping what is there; batches of ``BATCH``."""
    done = Imported()
    columns: dict[str, set[str]] = {}
    batch: list[tuple[int, Kind, dict[str, Any]]] = []

    async def flush() -> None:
        async with db.transaction() as tx:
            for number, kind, row in batch:
                if kind.table not in columns:
                    columns[kind.table] = await _columns(tx, kind.table)
                await _add(tx, kind, row, done, columns[kind.table], number)
        batch.clear()

    for item in items:
        batch.append(item)
        if len(batch) >= BATCH:
            await flush()
    if batch:
        await flush()
    async with db.transaction() as tx:  # the refs that pointed forward (an item's answer)
        for kind, store_id, column, old in done.pending:
            target = done.ids.get(kind.refs[column], {}).get(old)
            if store_id > 0 and target is not None:
                await tx.execute(f"UPDATE {kind.table} SET {column} = ? WHERE id = ? AND {column} IS NULL",
                                 (target, store_id))
    return done


async def _add(tx: Transaction, kind: Kind, row: dict[str, Any], done: Imported, columns: set[str],
               number: int) -> None:
    """One row in, or skipped as there already; counted either way."""
    unknown = set(row) - columns
    if unknown:
        raise BadExport(f"line {number}: {kind.table} has no column {', '.join(sorted(unknown))} in this store")
    row = dict(row)
    file_id = row.pop("id", None) if kind.serial else None
    forward: list[tuple[str, int]] = []
    for column, target in kind.refs.items():
        if row.get(column) is not None:
            old = int(row[column])
            row[column] = done.ids.get(target, {}).get(old)
            if row[column] is None and column in kind.later:
                forward.append((column, old))
    names = list(row)
    insert = f"INSERT INTO {kind.table} ({', '.join(names)}) VALUES ({', '.join('?' for _ in names)})"
    if not kind.serial:
        changed = await tx.execute(insert + f" ON CONFLICT ({', '.join(kind.key)}) DO NOTHING", tuple(row.values()))
        done.count(kind, added=changed > 0)
        return
    same = "IS NOT DISTINCT FROM" if tx.dialect == "postgresql" else "IS"  # a NULL matches a NULL
    match = " AND ".join(f"{c} {same} ?" for c in kind.key)
    found = await tx.fetchval(f"SELECT id FROM {kind.table} WHERE {match}", tuple(row[c] for c in kind.key))
    added = found is None
    if added:
        found = await tx.insert(insert, tuple(row.values()))
        done.pending += [(kind, int(found), column, old) for column, old in forward]
    done.count(kind, added=added)
    if file_id is not None:
        done.ids.setdefault(kind.table, {})[int(file_id)] = int(found)


async def counts(db: Reader) -> dict[str, int]:
    """Rows of each kind in the store."""
    return {k.table: int(await db.fetchval(f"SELECT COUNT(*) FROM {k.table}")) for k in KINDS}


__all__ = ["BATCH", "BY_TABLE", "FORMAT", "KINDS", "VERSION", "BadExport", "Imported", "Kind", "counts", "header",
           "import_rows", "lines", "parse", "rows"]
