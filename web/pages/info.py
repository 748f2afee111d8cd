"""Info: the version, Python, the store's backend, where the data lives, how much is in it, and this
process's live feed."""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path
from typing import Any

from benchwarmers_mcp import __version__
from benchwarmers_mcp.store import stats
from benchwarmers_mcp.web.registry import Page, View


def _size(path: Path) -> int:
    try:
        return int(path.stat().st_size)
    except OSError:
        return 0


async def load(view: View) -> dict[str, Any]:
    s = view.ctx.settings
    feed = view.ctx.events
    where = view.ctx.db.where  # the store this process opened: a SQLite file, or a URL with its password masked
    if where["backend"] == "sqlite":
        db_path = Path(where["path"])
        database = f"{db_path} ({(_size(db_path) + _size(db_path.with_name(db_path.name + '-wal'))) / 1e6:.1f} MB)"
    else:
        database = str(where["url"])
    return {"facts": {"Benchwarmers": __version__, "Python": sys.version.split()[0],
                      "Platform": platform.platform(terse=True), "Store": view.ctx.db.backend,
                      "Data folder": str(s.home), "Database": database,
                      "Config folder": str(s.config_dir), "Process": str(os.getpid()),
                      "Live feed": f"{feed.listeners} listening, last event {feed.last}" if feed else "off"},
            "counts": await stats.counts(view.ctx.db)}


PAGE = Page("/info", "Info", "Control", 20, "info.html", load, live=frozenset({"panel", "verdict", "change"}))
