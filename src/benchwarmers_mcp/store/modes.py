"""Who else may read the data folder and the SQLite store: every answer is in them, so they are
private to their owner (the folder 0700, the store's files 0600). A folder or file made by an older
release (0755 and 0644 under the usual umask), or copied in with its modes, is found here and
reported, each with the command that makes it private: by ``bench status`` (through
``/api/status``, the server looking at its own files) and by ``benchwarmers doctor`` (this machine,
no server needed). Nothing here changes a mode.

Only the group and other bits count: a folder 0500 or a file 0400 is private too. A link is judged
by what it points at, as the server reads through it. On a system without POSIX modes (Windows,
where ACLs guard files) nothing is reported.
"""

from __future__ import annotations

import os
import shlex
import stat
from dataclasses import dataclass
from pathlib import Path

from benchwarmers_mcp.store.db import is_postgres_url
from benchwarmers_mcp.store.folder import FILE_MODE, FOLDER_MODE  # the modes the server makes; one definition

STORE_SUFFIXES = ("", "-wal", "-shm", "-journal")  # the SQLite file and the ones SQLite keeps beside it


@dataclass(frozen=True)
class Loose:
    """One folder or file that others on this machine may read."""

    path: Path
    what: str  # "data folder" or "database file"
    mode: int
    wanted: int

    @property
    def fix(self) -> str:
        return f"chmod {self.wanted:o} {shlex.quote(str(self.path))}"

    def sentence(self) -> str:
        return (f"the {self.what} {self.path} is {self.mode:04o}: others on this machine can read every answer in it;"
                f" make it private with: {self.fix}")

    def as_json(self) -> dict[str, str]:
        return {"path": str(self.path), "what": self.what, "mode": f"{self.mode:04o}",
                "wanted": f"{self.wanted:04o}", "fix": self.fix, "message": self.sentence()}


def _loose(path: Path, wanted: int, what: str) -> Loose | None:
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError:  # not there (yet), or not ours to look at: nothing to report
        return None
    if not mode & 0o077 & ~wanted:
        return None
    return Loose(path, what, mode, wanted)


def store_files(db_path: Path) -> list[Path]:
    """The SQLite file and the files SQLite keeps beside it (its write-ahead log and index, a journal)."""
    return [db_path.with_name(db_path.name + suffix) for suffix in STORE_SUFFIXES]


def loose(home: Path | None, db_path: Path | None) -> list[Loose]:
    """The data folder ``home`` and the SQLite store ``db_path`` (either None: not looked at; the store
    is None on PostgreSQL) where group or others have any access, the folder first."""
    if os.name != "posix":
        return []
    found = [_loose(home, FOLDER_MODE, "data folder")] if home is not None else []
    if db_path is not None:
        found += [_loose(path, FILE_MODE, "database file") for path in store_files(db_path)]
    return [f for f in found if f is not None]


def loose_for(home: Path, target: Path | str) -> list[Loose]:
    """``loose`` for a data folder and the store's target (``Settings.store_target``: a PostgreSQL URL,
    whose files are the database server's, or a SQLite file)."""
    return loose(home, None if is_postgres_url(target) else Path(target))


__all__ = ["FILE_MODE", "FOLDER_MODE", "Loose", "loose", "loose_for", "store_files"]
