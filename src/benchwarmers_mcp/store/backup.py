"""A SQLite store copied whole while servers use it, and a copy put back (``backups.py`` drives both).

``copy_file`` uses SQLite's online backup API (``sqlite3.Connection.backup``): every page under one
read snapshot, so the copy holds every transaction committed before it began and none after, torn
by nothing the writers do meanwhile (they go on; the snapshot only keeps the WAL from starting over
until the copy is done). The copy is written to ``<name>.partial``, checked (``PRAGMA
quick_check``), made one self-contained file (rollback journal, no ``-wal`` beside it) and only
then renamed to its name: a backup is whole or absent.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

PARTIAL = ".partial"


class BadBackup(ValueError):
    """A file that is not a Benchwarmers SQLite store (or not a whole one)."""


def _check(conn: sqlite3.Connection, where: Path) -> None:
    try:
        verdict = conn.execute("PRAGMA quick_check").fetchone()[0]
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as e:
        raise BadBackup(f"{where} is not a SQLite database: {e}") from None
    if verdict != "ok":
        raise BadBackup(f"{where} is damaged: {verdict}")
    if not {"migrations", "panels", "verdicts"} <= tables:
        raise BadBackup(f"{where} is a SQLite database but not a Benchwarmers store")


def copy_file(source: Path, dest: Path) -> Path:
    """``source`` (a live store or a backup) copied to ``dest`` whole and checked; returns ``dest``."""
    if not source.is_file():
        raise BadBackup(f"{source} does not exist")
    partial = dest.with_name(dest.name + PARTIAL)
    dest.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        partial.unlink()
    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True, timeout=30)
    try:
        _check(src, source)
        out = sqlite3.connect(partial, isolation_level=None)
        try:
            src.backup(out)  # all pages in one step: one read snapshot
            out.execute("PRAGMA journal_mode=DELETE").close()
            _check(out, partial)
        finally:
            out.close()
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()
        raise
    finally:
        src.close()
    os.replace(partial, dest)
    return dest


def put_back(backup: Path, store: Path) -> None:
    """``backup`` made the store at ``store`` (no server may hold it: the caller checks), the old
    file's WAL and shared-memory files removed (they belong to the file replaced)."""
    copy_file(backup, store)
    for side in ("-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            Path(str(store) + side).unlink()


__all__ = ["PARTIAL", "BadBackup", "copy_file", "put_back"]
