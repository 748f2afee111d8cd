"""``benchwarmers doctor``: check a SQLite store's file, say what is damaged, and repair what can be.

It reads the file only (``store.integrity``), and says which of the data folder and the store's files
others on this machine may read, with the chmod that makes each private (``store.modes``; that alone
never makes the exit code non-zero); ``--repair`` copies what is readable into a new file
beside it, checks the copy whole, and puts it in place with the damaged file kept, renamed. Exit
codes: 0 the store is whole (or was repaired), 1 damaged (or the repair could not be made), 2 bad
usage (a PostgreSQL store, a server still serving on it).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import integrity, modes
from benchwarmers_mcp.store.db import is_postgres_url


def _size(n: int) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:,} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1000  # type: ignore[assignment]
    return str(n)


def _target(database: str | None, settings: Settings) -> Path | str:
    if database:
        return Path(database).expanduser()
    return settings.store_target


def show(found: integrity.Examination) -> None:
    state = "whole" if found.healthy else "DAMAGED"
    print(f"{found.path} ({_size(found.size)}): {state}")
    if found.unreadable:
        print(f"  it cannot be read as a database: {found.unreadable}")
        return
    if found.problem_count:
        more = f" (and {found.problem_count - len(found.problems)} more)" if found.problem_count > len(found.problems) else ""
        print(f"  PRAGMA integrity_check found {found.problem_count} problem(s){more}:")
        for line in found.problems:
            print(f"    {line}")
    whole = [t for t in found.tables if not t.error]
    for t in found.tables:
        if t.error:
            print(f"  {t.name}: {t.rows:,} row(s) readable; the rest is on pages that cannot be read ({t.error})")
    print(f"  {len(whole)} of {len(found.tables)} tables read whole ({sum(t.rows for t in whole):,} rows)")


def show_modes(database: str | None, target: Path | str, settings: Settings) -> int:
    """The data folder (unless a file was named) and the store's files when others may read them;
    how many."""
    loose = modes.loose(None if database else settings.home, None if is_postgres_url(target) else Path(target))
    for found in loose:
        print(found.sentence())
    return len(loose)


def doctor(database: str | None, repair: bool, settings: Settings) -> int:
    target = _target(database, settings)
    if is_postgres_url(target):
        show_modes(database, target, settings)
        print("benchwarmers: doctor checks a SQLite store; this one is PostgreSQL (BENCHWARMERS_DATABASE_URL): "
              "check it with PostgreSQL's own pg_amcheck, and restore it from its backups", file=sys.stderr)
        return 2
    path = Path(target)
    if not path.is_file():
        show_modes(database, target, settings)
        print(f"benchwarmers: no database at {path} (BENCHWARMERS_HOME names the data folder; or give the file)",
              file=sys.stderr)
        return 1
    found = integrity.examine(path)
    show(found)
    loose = show_modes(database, target, settings)
    if found.healthy:
        print("nothing to repair" if repair else "its modes aside (above), nothing to do" if loose else "nothing to do")
        return 0
    if not repair:
        print("what to do: stop the server, then restore the file from a backup, or run `benchwarmers doctor "
              "--repair` to copy what is readable into a new file (this one is kept, renamed)")
        return 1
    serving = integrity.serving(path, time.time())
    if serving:
        print(f"benchwarmers: {serving} server(s) wrote to this store in the last minutes: stop them first, then "
              "run `benchwarmers doctor --repair` again", file=sys.stderr)
        return 2
    return _repair(path)


def _repair(path: Path) -> int:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    into = path.with_name(f"{path.name}.recovered-{stamp}")
    try:
        recovery = integrity.recover(path, into)
    except integrity.StoreDamaged as e:
        print(f"benchwarmers: {e.message}; only a backup can bring it back", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"benchwarmers: cannot write the copy {into}: {e.strerror or e}", file=sys.stderr)
        return 1
    if recovery.how == "vacuum":
        print(f"copied the whole store into {into} (VACUUM INTO) and checked it")
    else:
        lost = [t for t in recovery.tables if t.error]
        print(f"copied what was readable into {into}, table by table, and checked it: "
              f"{sum(t.rows for t in recovery.tables):,} rows; rows on damaged pages of "
              f"{', '.join(t.name for t in lost) or 'no table'} are lost")
        for note in recovery.skipped:
            print(f"  not made again: {note}")
    try:
        kept = integrity.swap(path, into)
    except OSError as e:
        print(f"benchwarmers: the copy is ready at {into}, but it could not be put in place ({e.strerror or e}): "
              f"stop the server, move {path} aside and rename the copy to {path.name}", file=sys.stderr)
        return 1
    print(f"the damaged file is kept as {kept}; {path} is now the repaired copy: start the server again")
    return 0
