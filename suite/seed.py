"""Planting from the user's repositories: ``bench suite repos add`` and ``bench suite seed``.

A repository is a name and a folder on the server's machine, kept in the store. Seeding reads
its Python files (tests, migrations, vendored and build folders left out), plants ``count``
bug/control pairs with ``plant.choose`` and writes them to the data folder as drafts. The units
used are recorded in the store first (``rel::name``), so a unit is never planted twice, even by
two seeds at once.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio.to_thread

from benchwarmers_mcp.errors import BadRequest, NotFound
from benchwarmers_mcp.store import Database
from benchwarmers_mcp.store import suite as suite_store
from benchwarmers_mcp.suite import library, mutate, plant

REPO_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,39}$")
MAX_FILE_BYTES = 400_000
MAX_FILES = 5000


async def add_repo(db: Database, name: str, path: str) -> dict[str, Any]:
    if not REPO_NAME_RE.match(name):
        raise BadRequest("a repository name is lower-case letters, digits, '.', '_' or '-' (at most 40)")
    folder = await anyio.to_thread.run_sync(_folder, path)
    await suite_store.add_repo(db, name, folder)
    return {"name": name, "path": folder}


def _folder(path: str) -> str:
    folder = Path(path).expanduser()
    if not folder.is_absolute():
        raise BadRequest(f"give the repository's full path on the server's machine (got {path!r})")
    if not folder.is_dir():
        raise BadRequest(f"no folder at {folder} on the server's machine")
    return str(folder.resolve())


def read_repo(root: Path) -> list[tuple[str, str]]:
    """(rel, text) for every Python file that may be planted in, in path order."""
    out: list[tuple[str, str]] = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if plant.skipped(rel) or not path.is_file() or path.stat().st_size > MAX_FILE_BYTES:
            continue
        try:
            out.append((rel, path.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError):
            continue
        if len(out) >= MAX_FILES:
            break
    return out


async def seed(db: Database, home: Path, repo: str, *, count: int = 6, hard: bool = False, seed: int = 0,
               kinds: list[str] | None = None) -> list[dict[str, Any]]:
    """Plant up to ``count`` pairs in ``repo``; returns the new tasks (bug and control, drafts)."""
    if not 1 <= count <= 50:
        raise BadRequest("count must be 1 to 50 pairs")
    if kinds and set(kinds) - set(mutate.ALL_KINDS):
        raise BadRequest(f"unknown kinds: {', '.join(sorted(set(kinds) - set(mutate.ALL_KINDS)))}; known: "
                         f"{', '.join(mutate.ALL_KINDS)}")
    known = await suite_store.repos(db)
    if repo not in known:
        raise NotFound(f"no repository named {repo!r}; add it with bench suite repos add {repo} PATH")
    root = Path(known[repo])
    files = await anyio.to_thread.run_sync(read_repo, root)
    used = await suite_store.used_units(db, repo)
    catalog = await library.load(home)
    try:
        pairs = await anyio.to_thread.run_sync(lambda: plant.choose(
            files, count=count, seed=seed, hard=hard, used=used, kinds=kinds, id_prefix=f"seed-{plant.slug(repo, 20)}",
            meta={"repo": repo}))
    except ValueError as e:
        raise BadRequest(str(e)) from None
    pairs = [p for p in pairs if p.bug.id not in catalog.entries and p.control.id not in catalog.entries]
    won = await suite_store.claim_units(db, repo, [(p.unit.key, p.bug.id) for p in pairs])
    written: list[dict[str, Any]] = []
    for pair in pairs:
        if pair.unit.key not in won:
            continue
        try:
            await library.write(home, pair.bug)
            await library.write(home, pair.control)
        except BaseException:
            await suite_store.release_units(db, repo, [pair.unit.key])
            raise
        for task in (pair.bug, pair.control):
            written.append({**task.summary(), "origin": "data", "unit": pair.unit.key,
                            "mutation": pair.mutation.kind, "detail": pair.mutation.detail,
                            "fault_line": pair.mutation.line if task.kind == "bug" else None})
    return written
