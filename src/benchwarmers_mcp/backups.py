"""Backups of the store and their restore: ``benchwarmers backup [PATH]``, the scheduler's ``backup``
job (which keeps the last ``BENCH_BACKUP_KEEP``) and ``benchwarmers restore PATH``.

On SQLite a backup is a copy of the database file taken with SQLite's online backup API while
servers go on writing (``store/backup.py``): it holds every write acknowledged before it began. On
PostgreSQL it is the store's own export (``store/export.py``: JSON lines), which ``restore`` imports
(``pg_dump`` works too, and is PostgreSQL's own way). A restore refuses while any server holds
the store (one seen in the store's ``replicas`` lately) and says what it restored.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from benchwarmers_mcp.context import Context
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import Database, export, replicas
from benchwarmers_mcp.store import backup as files
from benchwarmers_mcp.store import copy as store_copy
from benchwarmers_mcp.store.db import is_postgres_url

PREFIX = "benchwarmers-"
SHOWN = ("endpoints", "models", "collections", "panels", "seats", "verdicts", "route_turns", "suite_answers")


class Refused(Exception):
    """Why a backup or a restore cannot be done, in one sentence."""


def folder_of(settings: Settings) -> Path:
    return settings.backup_dir or settings.home / "backups"


def _postgres(settings: Settings) -> bool:
    return is_postgres_url(settings.store_target)


def target_of(settings: Settings, path: Path | None, now: float) -> Path:
    """Where a backup goes: ``path`` (a folder: a new name in it), else the backups folder."""
    name = PREFIX + time.strftime("%Y%m%d-%H%M%S", time.gmtime(now)) + (".jsonl" if _postgres(settings) else ".db")
    if path is None:
        return folder_of(settings) / name
    return path / name if path.is_dir() else path


async def _export_to(db: Database, dest: Path) -> None:
    partial = dest.with_name(dest.name + files.PARTIAL)
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        out = await anyio.open_file(partial, "w", encoding="utf-8")
        async with out:
            chunk: list[str] = []
            async for line in export.lines(db):
                chunk.append(line)
                if len(chunk) >= export.BATCH:
                    await out.write("".join(chunk))
                    chunk.clear()
            await out.write("".join(chunk))
        os.replace(partial, dest)
    finally:
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()


async def take(settings: Settings, db: Database | None = None, path: Path | None = None,
               now: float | None = None) -> Path:
    """A backup of the store now; its path. ``db``: the store when already open (PostgreSQL's)."""
    dest = target_of(settings, path, time.time() if now is None else now)
    if not _postgres(settings):
        source = Path(settings.store_target)
        if not await anyio.Path(source).is_file():
            raise Refused(f"there is no store to back up at {source}")
        try:
            return await anyio.to_thread.run_sync(files.copy_file, source, dest)
        except (files.BadBackup, OSError) as e:
            raise Refused(f"the backup failed: {e}") from None
    if db is not None:
        await _export_to(db, dest)
        return dest
    async with Database(settings.store_target) as opened:
        await _export_to(opened, dest)
    return dest


def prune(folder: Path, keep: int) -> list[Path]:
    """The backups in ``folder`` beyond the newest ``keep`` (by name: their time), removed."""
    found = sorted(p for p in folder.glob(PREFIX + "*") if p.suffix in (".db", ".jsonl") and p.is_file())
    gone = found[:-keep] if keep > 0 else []
    for path in gone:
        path.unlink(missing_ok=True)
    return gone


async def scheduled(ctx: Context) -> dict[str, Any]:
    """The ``backup`` job: one backup, then all but the newest ``BENCH_BACKUP_KEEP`` removed."""
    keep = ctx.settings.backup_keep
    if keep == 0:
        return {"backup": None, "why": "BENCH_BACKUP_KEEP is 0: no backups kept"}
    path = await take(ctx.settings, ctx.db, None, ctx.clock.now())
    gone = prune(path.parent, keep) if path.parent == folder_of(ctx.settings) else []
    return {"backup": str(path), "removed": [p.name for p in gone], "keep": keep}


@dataclass(frozen=True)
class Restored:
    path: Path
    store: str
    counts: dict[str, int]
    added: dict[str, int] | None = None  # PostgreSQL's import: rows added per kind

    def text(self) -> str:
        shown = ", ".join(f"{self.counts.get(k, 0):,} {k.replace('_', ' ')}" for k in SHOWN)
        return f"restored {self.path} into {self.store}: {shown}"


async def _refuse_if_served(db: Database) -> None:
    live = await replicas.recent(db, time.time())
    if live:
        names = ", ".join(f"{r['host']} pid {r['pid']}" for r in live)
        raise Refused(f"a server holds this store ({names}): stop it first (one that crashed is forgotten "
                      f"{replicas.RECENT:g} s after its last beat)")


async def restore(settings: Settings, path: Path, label: str) -> Restored:
    """Put the backup at ``path`` back as the store; refused while a server holds the store."""
    if not await anyio.Path(path).is_file():
        raise Refused(f"there is no backup at {path}")
    if _postgres(settings):
        async with Database(settings.store_target) as db:
            await _refuse_if_served(db)
            try:
                with path.open(encoding="utf-8") as lines:
                    done = await export.import_rows(db, export.parse(lines))
            except (export.BadExport, UnicodeDecodeError) as e:
                raise Refused(f"{path} is not a backup this version reads: {e}") from None
            return Restored(path, label, await export.counts(db), done.added)
    store = Path(settings.store_target)
    if await anyio.Path(store).exists():
        async with Database(store) as db:
            await _refuse_if_served(db)
    try:
        await anyio.to_thread.run_sync(files.put_back, path, store)
    except files.BadBackup as e:
        raise Refused(str(e)) from None
    async with Database(store) as db:  # an older backup's schema is brought up to date here
        return Restored(path, label, await export.counts(db))


@dataclass(frozen=True)
class Moved:
    """A store copy's end: each table's rows on both sides, and the models whose rating differs."""

    copied: store_copy.Copied
    ratings: int
    unequal_ratings: list[str]

    @property
    def equal(self) -> bool:
        return not self.copied.unequal and not self.unequal_ratings


Posterior = tuple[tuple[float, ...], str]


async def _ratings(db: Database, now: float) -> dict[str, Posterior]:
    """Every model's rating everywhere: its posterior's numbers, and the raw counts it came from."""
    from benchwarmers_mcp.engine.learning import ratings_for

    return {a: ((r.alpha, r.beta, r.weight, r.wrong_alpha, r.wrong_beta, r.health_ok, r.health_failed),
                json.dumps(r.counts, sort_keys=True)) for a, r in (await ratings_for(db, "", "", now=now)).items()}


def _close(a: Posterior, b: Posterior | None) -> bool:
    # the same evidence summed in another order by another database: the last bits may differ
    return b is not None and a[1] == b[1] and all(
        math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12) for x, y in zip(a[0], b[0], strict=True))


async def copy_to(settings: Settings, url: str, label: str,
                  progress: Callable[[str, int], None] = lambda table, rows: None) -> Moved:
    """The SQLite store copied into the PostgreSQL database at ``url`` (``store/copy.py``), then
    every table's rows and every model's rating compared on both sides."""
    if _postgres(settings):
        raise Refused("the store is PostgreSQL already: store copy moves a SQLite store to PostgreSQL")
    if not is_postgres_url(url):
        raise Refused("--to takes a postgresql:// URL")
    if not await anyio.Path(Path(settings.store_target)).is_file():
        raise Refused(f"there is no store at {settings.store_target}")
    async with Database(settings.store_target) as source, Database(url) as dest:
        await _refuse_if_served(source)
        try:
            copied = await store_copy.copy(source, dest, label, progress=progress)
        except store_copy.CopyRefused as e:
            raise Refused(str(e)) from None
        now = time.time()
        before, after = await _ratings(source, now), await _ratings(dest, now)
        unequal = sorted(a for a, r in before.items() if not _close(r, after.get(a)))
        moved = Moved(copied, len(before), unequal)
        if moved.equal:
            await store_copy.finish(dest, label)
        return moved


__all__ = ["Moved", "Refused", "copy_to", "Restored", "folder_of", "prune", "restore", "scheduled", "take", "target_of"]
