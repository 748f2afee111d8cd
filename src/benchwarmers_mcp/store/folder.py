"""The data folder is private to its owner: the folder (and every folder in it) 0700, every file in
it 0600, made so when it is made and again on every start (``app.py``'s lifespan); the SQLite file
and its ``-wal`` and ``-shm`` too when they are opened (``sqlite.py``). Links are never followed.

On Windows the modes mean little (files there are guarded by ACLs); nothing is changed there.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

log = logging.getLogger("benchwarmers.store")

FOLDER_MODE, FILE_MODE = 0o700, 0o600


def private_file(path: Path) -> None:
    """``path`` 0600 when it is a file of this user's (a link, or anything else, left alone)."""
    if os.name == "nt":
        return
    try:
        st = path.lstat()
        if stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) != FILE_MODE:
            path.chmod(FILE_MODE)
    except FileNotFoundError:
        return
    except OSError as e:
        log.warning("could not make %s private (mode 0600): %s", path, e.strerror or e)


def private_folder(home: Path) -> None:
    """Make ``home`` (and its parents, as usual) and make it private: 0700, the folders in it 0700,
    the files in it 0600. A failure to change a mode is logged, never raised."""
    home.mkdir(parents=True, exist_ok=True, mode=FOLDER_MODE)
    if os.name == "nt":
        return
    for folder, dirs, files in os.walk(home):  # never into a link (followlinks is off)
        here = Path(folder)
        try:
            if stat.S_IMODE(here.lstat().st_mode) != FOLDER_MODE:
                here.chmod(FOLDER_MODE)
        except OSError as e:
            log.warning("could not make %s private (mode 0700): %s", here, e.strerror or e)
        for name in files:
            private_file(here / name)
        dirs[:] = [d for d in dirs if not (here / d).is_symlink()]


__all__ = ["FILE_MODE", "FOLDER_MODE", "private_file", "private_folder"]
