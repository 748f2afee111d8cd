"""The data folder is private to its owner (issue 30): the folder and the folders in it 0700, the
database, its ``-wal`` and ``-shm`` and every other file in it 0600, when the store opens and on
every start of the app, whatever they were before. Links are left alone."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import Database, retention
from tests.kits.health import ManualClock, running_app

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(os.name == "nt", reason="POSIX modes")]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def open_file(tmp_path: Path) -> Path:
    """A database file anyone may read (0644), not yet a database."""
    path = tmp_path / "store" / "benchwarmers.db"
    path.parent.mkdir()
    path.touch(mode=0o644)
    path.chmod(0o644)
    return path


async def test_the_sqlite_store_is_made_private_when_it_opens(tmp_path: Path) -> None:
    path = open_file(tmp_path)
    async with Database(path) as db:
        await retention.save_retention(db, 30)  # a write: SQLite makes its -wal and -shm
        made = [p for p in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm"))
                if p.exists()]
        assert len(made) == 3 and {mode(p) for p in made} == {0o600}


def plant(home: Path, tmp_path: Path) -> Path:
    """A data folder left open to others (0755, its files 0644 and 0664), with a link to a file outside."""
    home.chmod(0o755)
    (home / "notes.txt").write_text("mine")
    (home / "notes.txt").chmod(0o644)
    (home / "suite").mkdir(mode=0o755)
    (home / "suite" / "task.json").write_text("{}")
    (home / "suite" / "task.json").chmod(0o664)
    outside = tmp_path / "outside.txt"
    outside.write_text("not the data folder's")
    outside.chmod(0o644)
    (home / "link.txt").symlink_to(outside)
    return outside


async def test_the_app_makes_its_data_folder_private_on_start(home: Path, settings: Settings, tmp_path: Path) -> None:
    outside = plant(home, tmp_path)
    async with running_app(settings, ManualClock()):
        pass
    assert (mode(home), mode(home / "suite")) == (0o700, 0o700)
    assert {mode(home / "notes.txt"), mode(home / "suite" / "task.json"), mode(home / "benchwarmers.db")} == {0o600}
    assert mode(outside) == 0o644  # a link in it is not followed
