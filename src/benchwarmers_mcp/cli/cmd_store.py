"""The store's own commands, run on the store itself (the data folder, or
``BENCHWARMERS_DATABASE_URL``), beside a running server or without one:

    benchwarmers backup [PATH]          a consistent copy now (backups.py)
    benchwarmers restore PATH           a backup put back; refused while a server holds the store
    benchwarmers export [--since DATE]  the user's data as JSON lines on stdout (store/export.py)
    benchwarmers import FILE            an export read in, skipping what is there
    benchwarmers store copy --to URL    the SQLite store copied into PostgreSQL (resumable), compared

Each says what it did on stderr in one line (the export's lines alone go to stdout), and refuses
in one line with exit 1 (2 for bad usage). No password is ever printed (``store_label``).
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import anyio

from benchwarmers_mcp.settings import Settings

COMMANDS = ("backup", "restore", "export", "import", "store")


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    backup = sub.add_parser("backup", help="a consistent copy of the store, while the server runs")
    backup.add_argument("path", nargs="?", help="the file or folder (default: BENCH_BACKUP_DIR or <data>/backups)")
    restore = sub.add_parser("restore", help="put a backup back as the store (no server may hold it)")
    restore.add_argument("path", help="the backup file")
    exp = sub.add_parser("export", help="the user's data as versioned JSON lines on stdout")
    exp.add_argument("--since", help="only panels, verdicts, turns, suite runs and alerts from this date "
                                     "(YYYY-MM-DD or an ISO time; UTC unless it says)")
    imp = sub.add_parser("import", help="read an export into the store, skipping what is already there")
    imp.add_argument("file", help="the export (JSON lines)")
    store = sub.add_parser("store", help="the store itself: copy a SQLite store into PostgreSQL")
    store_sub = store.add_subparsers(dest="store_command", required=True)
    copy = store_sub.add_parser("copy", help="copy this SQLite store into an empty PostgreSQL database, in "
                                             "batches; run again to resume; compares row counts and ratings")
    copy.add_argument("--to", required=True, metavar="URL", help="postgresql://user:password@host:5432/db")


def _since(text: str | None) -> float | None:
    """``--since`` as epoch seconds (UTC unless it names a zone); ValueError for what is no date."""
    if text is None:
        return None
    moment = datetime.fromisoformat(text.strip())
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def run(command: str, args: argparse.Namespace, settings: Settings) -> int:
    from benchwarmers_mcp.cli.server import refuse

    for name in ("path", "file"):  # the paths as given, ~ expanded
        if getattr(args, name, None):
            setattr(args, name, Path(getattr(args, name)).expanduser())
    if command == "import" and not args.file.is_file():
        return refuse(f"there is no file {args.file}")
    if command == "export":
        try:
            args.since = _since(args.since)
        except ValueError:
            return refuse(f"--since takes a date like 2026-12-01 or an ISO time, not {args.since!r}", 2)
    try:
        return anyio.run(_run, command, args, settings)
    except _Failed as e:
        return refuse(e.message)


async def _copy(settings: Settings, url: str, label: str) -> int:
    from benchwarmers_mcp import backups
    from benchwarmers_mcp.store.db import mask_url

    shown = mask_url(url)
    said = {"table": ""}

    def progress(table: str, rows: int) -> None:
        if table != said["table"]:
            said["table"] = table
            print(f"copying {table} ...", file=sys.stderr, flush=True)

    moved = await backups.copy_to(settings, url, label, progress)
    rows = sum(a for a, _ in moved.copied.tables.values())
    where = f"{label} to postgresql {shown}"
    if not moved.equal:
        tables = ", ".join(f"{t} {a} here, {b} there" for t, (a, b) in moved.copied.tables.items() if a != b)
        ratings = ", ".join(moved.unequal_ratings)
        raise _Failed(f"copied {where}, but they differ: {tables or 'rows equal'}; "
                      f"{('ratings of ' + ratings) if ratings else 'ratings equal'}; run it again to resume")
    print(f"copied {where}{' (resumed)' if moved.copied.resumed else ''}: {rows:,} rows in "
          f"{len(moved.copied.tables)} tables, every count equal; {moved.ratings} models' ratings equal. "
          "Set BENCHWARMERS_DATABASE_URL to it and start the servers.", file=sys.stderr)
    return 0


class _Failed(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


async def _run(command: str, args: argparse.Namespace, settings: Settings) -> int:
    from benchwarmers_mcp import backups
    from benchwarmers_mcp.cli.server import store_label
    from benchwarmers_mcp.store import Database, export
    from benchwarmers_mcp.store.db import StoreUnavailable

    label = store_label(settings)
    try:
        if command == "backup":
            path = await backups.take(settings, None, args.path)
            print(f"backup of {label} written: {path}", file=sys.stderr)
            return 0
        if command == "restore":
            restored = await backups.restore(settings, args.path, label)
            print(restored.text(), file=sys.stderr)
            return 0
        if command == "export":
            async with Database(settings.store_target) as db:
                written = 0
                async for line in export.lines(db, args.since):
                    sys.stdout.write(line)
                    written += 1
            sys.stdout.flush()
            print(f"exported {written - 1:,} rows of {label}", file=sys.stderr)
            return 0
        if command == "store":
            return await _copy(settings, args.to, label)
        file: Path = args.file
        async with Database(settings.store_target) as db:
            started = time.monotonic()
            with file.open(encoding="utf-8") as lines:
                done = await export.import_rows(db, export.parse(lines))
        added, skipped = sum(done.added.values()), sum(done.skipped.values())
        kinds = ", ".join(f"{n:,} {k.replace('_', ' ')}" for k, n in done.added.items() if n)
        skipped_kinds = ", ".join(f"{n:,} {k}" for k, n in done.skipped.items() if n)
        print(f"imported {file} into {label} in {time.monotonic() - started:.1f} s: {added:,} rows added"
              f"{' (' + kinds + ')' if kinds else ''}, {skipped:,} already there"
              f"{' (' + skipped_kinds + ')' if skipped_kinds else ''}", file=sys.stderr)
        return 0
    except backups.Refused as e:
        raise _Failed(str(e)) from None
    except export.BadExport as e:
        raise _Failed(f"{args.file} is not an export this version reads: {e}") from None
    except UnicodeDecodeError:
        raise _Failed(f"{args.file} is not UTF-8 text: not an export") from None
    except StoreUnavailable as e:
        raise _Failed(e.message) from None
    except OSError as e:
        raise _Failed(f"{command} failed: {e.strerror or e}") from None
    except Exception as e:  # a row the store refuses (an export cut by --since, a newer schema): one line
        from benchwarmers_mcp.cli.server import _masked

        raise _Failed(f"{command} failed: {type(e).__name__}: {_masked(settings, e)}") from None
