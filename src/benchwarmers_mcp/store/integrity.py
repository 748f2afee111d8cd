"""Is a SQLite store's file whole, and what can be saved from one that is not.

- ``check_at_open(conn, path)``: the store's open runs SQLite's ``PRAGMA quick_check`` before
  anything else reads the file, and a damaged one is refused (``StoreDamaged``, one sentence
  naming the file and what to do), so a server never starts on it only to fail page by page. The
  check reads every page, which a big store pays in seconds (docs/CLI.md, "doctor", has the
  figures), so it is skipped when the file is exactly the one a clean stop left (``mark_clean``):
  same device, inode, size, modification and change times, and no write-ahead log waiting. A
  restore, a copy, an edit or a crash changes one of them, and the next start checks in full.
  The mark is good for one start: it is taken away when read.
- ``examine(path)``: what ``benchwarmers doctor`` reports, read-only: ``PRAGMA integrity_check``,
  and each table's rows that can be read.
- ``recover(path, into)``: what can be read, copied into a new file (``VACUUM INTO`` when the
  file reads whole, else table by table, past the pages that cannot be read), checked;
  ``swap(path, recovered)`` then puts it in place and keeps the damaged file beside it, renamed.
  Nothing here ever writes to the damaged file.

All of it is synchronous sqlite3 on one file: the open runs it in a worker thread, the doctor is a
command of its own.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from benchwarmers_mcp.store.db import StoreUnavailable
from benchwarmers_mcp.store.replicas import RECENT

DAMAGE_CODES = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})
SHOWN_PROBLEMS = 20  # integrity_check lines the doctor shows (it counts the rest)
BATCH = 500  # rows read at a time while copying a table
SIDE_FILES = ("-wal", "-shm")


class StoreDamaged(StoreUnavailable):
    """The SQLite file is damaged (or is not a SQLite database): a 503 that says what to do."""

    def __init__(self, path: Path, detail: str, *, header: bool = False) -> None:
        what = (f"cannot open the database {path}: it is not a SQLite database, or its first page is damaged"
                if header else f"the database {path} is damaged ({' '.join(detail.split())[:200]})")
        super().__init__(f"{what}: restore it from a backup, or run `benchwarmers doctor` to see what is readable"
                         " (`benchwarmers doctor --repair` copies that into a new file and keeps this one)")
        self.path = path


def is_damage(error: BaseException) -> bool:
    """An sqlite3 error that says the file is damaged, as opposed to busy, full or refused."""
    code = getattr(error, "sqlite_errorcode", None)
    return isinstance(error, sqlite3.DatabaseError) and code is not None and code & 0xFF in DAMAGE_CODES


# ---- at open: the quick check, and the mark a clean stop leaves ----------------------------------

def _mark_path(path: Path) -> Path:
    return path.with_name(path.name + "-clean")


def _identity(path: Path) -> dict[str, int]:
    st = path.stat()
    return {"dev": st.st_dev, "inode": st.st_ino, "size": st.st_size, "mtime_ns": st.st_mtime_ns,
            "ctime_ns": st.st_ctime_ns}


def _log_waiting(path: Path) -> bool:
    wal = path.with_name(path.name + "-wal")
    return wal.exists() and wal.stat().st_size > 0


def mark_clean(path: Path) -> bool:
    """After a clean stop: remember the file as it is now, so the next start need not read it all.
    Nothing is marked while a write-ahead log is waiting (another process still has the store open)."""
    try:
        if not path.is_file() or _log_waiting(path):
            return False
        mark = _mark_path(path)
        mark.write_text(json.dumps(_identity(path)))
        return True
    except OSError:
        return False


def _left_clean(path: Path) -> bool:
    """The file is the one the last clean stop marked (and the mark is used up now)."""
    mark = _mark_path(path)
    try:
        recorded = json.loads(mark.read_text())
        mark.unlink()
    except (OSError, ValueError):
        return False
    try:
        return isinstance(recorded, dict) and recorded == _identity(path) and not _log_waiting(path)
    except OSError:
        return False


def check_at_open(conn: sqlite3.Connection, path: Path) -> None:
    """``PRAGMA quick_check`` on the store about to be used; ``StoreDamaged`` if it is damaged.
    A new (empty) file, and a file exactly as a clean stop left it, need no check."""
    try:
        if not path.exists() or path.stat().st_size == 0 or _left_clean(path):
            return
    except OSError:
        return  # the open itself says what is wrong with a file it cannot read
    try:
        rows = conn.execute("PRAGMA quick_check").fetchall()
    except sqlite3.DatabaseError as e:
        if is_damage(e):
            raise StoreDamaged(path, str(e), header=e.sqlite_errorcode == sqlite3.SQLITE_NOTADB) from e
        raise
    problems = [str(row[0]) for row in rows if not str(row[0]).startswith("*** in database")]
    if problems != ["ok"]:
        more = f" and {len(problems) - 1} more" if len(problems) > 1 else ""
        raise StoreDamaged(path, f"{problems[0]}{more}")


# ---- the doctor ----------------------------------------------------------------------------------

@dataclass
class TableState:
    """One table as read: the rows that could be read, and the first error, if any."""

    name: str
    rows: int = 0
    error: str | None = None


@dataclass
class Examination:
    path: Path
    size: int
    problems: list[str] = field(default_factory=list)  # integrity_check's lines (at most SHOWN_PROBLEMS)
    problem_count: int = 0
    tables: list[TableState] = field(default_factory=list)
    unreadable: str | None = None  # the file cannot be read as a database at all (its schema, its header)

    @property
    def healthy(self) -> bool:
        return self.unreadable is None and self.problem_count == 0 and not any(t.error for t in self.tables)


@dataclass
class Recovery:
    into: Path
    how: str  # "vacuum" (the file read whole) or "copy" (table by table, past what cannot be read)
    tables: list[TableState] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # schema entries that could not be made again


def _read_only(path: Path) -> sqlite3.Connection:
    """A connection that cannot write to ``path`` (nor checkpoint its log into it)."""
    return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _schema(conn: sqlite3.Connection) -> list[tuple[str, str, str, str]]:
    """(type, name, table, sql) of every user table, index, trigger and view, tables first."""
    rows = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_schema WHERE sql IS NOT NULL"
                        " AND name NOT LIKE 'sqlite_%' ORDER BY CASE type WHEN 'table' THEN 0 WHEN 'index' THEN 1"
                        " WHEN 'view' THEN 2 ELSE 3 END, rowid").fetchall()
    return [(str(t), str(n), str(tb), str(s)) for t, n, tb, s in rows]


def _first_readable(conn: sqlite3.Connection, table: str, failed: int) -> int | None:
    """Where to read ``table`` on from when reading past rowid ``failed`` fails: the point past the
    pages that cannot be read (found by doubling a step, then halving it), as the rowid to read
    after, or None when nothing readable follows."""
    def after(point: int) -> tuple[bool, int | None]:  # (readable, the first rowid past point)
        try:
            row = conn.execute(f"SELECT rowid FROM {_quote(table)} WHERE rowid > ? ORDER BY rowid LIMIT 1",
                               (point,)).fetchone()
        except sqlite3.DatabaseError:
            return False, None
        return True, None if row is None else int(row[0])

    top, step = 2 ** 63 - 1, 1
    while failed + step < top and not after(failed + step)[0]:
        step *= 2
    if failed + step >= top:
        return None
    bad, good = (failed + step // 2 if step > 1 else failed), failed + step
    while good - bad > 1:
        middle = (bad + good) // 2
        bad, good = (bad, middle) if after(middle)[0] else (middle, good)
    _, first = after(good)
    return None if first is None else first - 1


def _rows(conn: sqlite3.Connection, table: str, state: TableState) -> Iterator[tuple[object, ...]]:
    """Every row of ``table`` that can be read, in rowid order (the rowid first), walking past
    pages that cannot be read; the first error is kept on ``state``."""
    after = -(2 ** 63)
    first = True
    while True:
        got = 0
        try:
            op = ">=" if first else ">"
            cursor = conn.execute(f"SELECT rowid, * FROM {_quote(table)} WHERE rowid {op} ? ORDER BY rowid LIMIT ?",
                                  (after, BATCH))
            for row in cursor:
                after, got, first = int(row[0]), got + 1, False
                yield tuple(row)
        except sqlite3.DatabaseError as e:
            state.error = state.error or str(e)
            resume = _first_readable(conn, table, after)
            if resume is None:
                return
            after, first = resume, False  # always past ``after``: the walk moves on
            continue
        if got < BATCH:
            return


def examine(path: Path) -> Examination:
    """What the doctor finds, read-only: ``integrity_check`` and each table's readable rows."""
    found = Examination(path, path.stat().st_size)
    try:
        conn = _read_only(path)
    except sqlite3.Error as e:
        found.unreadable = str(e)
        return found
    try:
        try:
            lines = [str(r[0]) for r in conn.execute("PRAGMA integrity_check").fetchall()]
        except sqlite3.DatabaseError as e:
            lines = [str(e)]
        lines = [line for line in lines if not line.startswith("*** in database")]
        if lines != ["ok"]:
            found.problem_count = len(lines)
            found.problems = lines[:SHOWN_PROBLEMS]
        try:
            schema = _schema(conn)
        except sqlite3.DatabaseError as e:
            found.unreadable = f"its schema cannot be read: {e}"
            return found
        for kind, name, _, _ in schema:
            if kind == "table":
                state = TableState(name)
                state.rows = sum(1 for _ in _rows(conn, name, state))
                found.tables.append(state)
        return found
    finally:
        conn.close()


def serving(path: Path, now: float) -> int:
    """How many servers wrote their heartbeat to this store lately (``store.replicas``): a repair
    waits for them to stop. A file whose heartbeats cannot be read counts none."""
    try:
        conn = _read_only(path)
    except sqlite3.Error:
        return 0
    try:
        return int(conn.execute("SELECT count(*) FROM replicas WHERE seen >= ?", (now - RECENT,)).fetchone()[0])
    except sqlite3.Error:
        return 0
    finally:
        conn.close()


def _vacuum_into(src: sqlite3.Connection, into: Path) -> bool:
    try:
        src.execute("VACUUM INTO ?", (str(into),))
    except sqlite3.DatabaseError:
        into.unlink(missing_ok=True)
        return False
    return _whole(into)


def _whole(path: Path) -> bool:
    conn = sqlite3.connect(path)
    try:
        return [r[0] for r in conn.execute("PRAGMA integrity_check").fetchall()] == ["ok"]
    except sqlite3.DatabaseError:
        return False
    finally:
        conn.close()


def _copy(src: sqlite3.Connection, into: Path, recovery: Recovery) -> None:
    """The schema and every readable row, table by table; indexes and triggers made after the rows
    (so no trigger fires on a copied row); AUTOINCREMENT counters carried over."""
    schema = _schema(src)
    dst = sqlite3.connect(into, isolation_level=None)
    try:
        dst.execute("PRAGMA journal_mode=OFF")
        dst.execute("BEGIN")
        for kind, name, _, sql in schema:
            if kind != "table":
                continue
            dst.execute(sql)
            state = TableState(name)
            columns = [str(r[1]) for r in src.execute(f"PRAGMA table_info({_quote(name)})").fetchall()]
            insert = (f"INSERT INTO {_quote(name)} ({', '.join(_quote(c) for c in columns)})"
                      f" VALUES ({', '.join('?' * len(columns))})")
            for row in _rows(src, name, state):
                dst.execute(insert, row[1:])
                state.rows += 1
            recovery.tables.append(state)
        for kind, name, _, sql in schema:
            if kind != "table":
                try:
                    dst.execute(sql)
                except sqlite3.DatabaseError as e:  # a unique index over rows a damaged page held twice
                    recovery.skipped.append(f"{kind} {name}: {e}")
        try:
            counters = src.execute("SELECT name, seq FROM sqlite_sequence").fetchall()
        except sqlite3.DatabaseError:
            counters = []
        for name, seq in counters:
            dst.execute("DELETE FROM sqlite_sequence WHERE name = ? AND seq < ?", (name, seq))
            dst.execute("INSERT INTO sqlite_sequence (name, seq) SELECT ?, ? WHERE NOT EXISTS"
                        " (SELECT 1 FROM sqlite_sequence WHERE name = ?)", (name, seq, name))
        dst.execute("COMMIT")
    finally:
        dst.close()


def recover(path: Path, into: Path) -> Recovery:
    """What can be read of ``path``, copied into the new file ``into`` and checked whole; the
    original is only read. ``StoreDamaged`` when nothing can be saved (the schema is unreadable)."""
    if into.exists():
        raise FileExistsError(into)
    src = _read_only(path)
    try:
        if _vacuum_into(src, into):
            return Recovery(into, "vacuum")
        recovery = Recovery(into, "copy")
        try:
            _copy(src, into, recovery)
        except sqlite3.DatabaseError as e:
            into.unlink(missing_ok=True)
            raise StoreDamaged(path, f"not even its schema can be read: {e}") from e
    finally:
        src.close()
    if not _whole(into):
        into.unlink(missing_ok=True)
        raise StoreDamaged(path, "the copy of what was readable did not check whole")
    return recovery


def swap(path: Path, recovered: Path, now: float | None = None) -> Path:
    """Put ``recovered`` in place of ``path``; the damaged file (and its -wal and -shm) is kept
    beside it, renamed ``<name>.damaged-<when>``, never overwritten. Returns the kept file's path."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    kept = path.with_name(f"{path.name}.damaged-{stamp}")
    if kept.exists():
        raise FileExistsError(kept)
    os.replace(path, kept)
    for suffix in SIDE_FILES:
        side = path.with_name(path.name + suffix)
        if side.exists():
            os.replace(side, kept.with_name(kept.name + suffix))
    os.replace(recovered, path)
    _mark_path(path).unlink(missing_ok=True)
    return kept
