"""The admin API: JSON on the server's own port, under ``/api/``, used by the ``bench`` CLI and
the dashboard. Each concept has its module (admin_endpoints, admin_models, admin_collections);
this one holds the status summary. Their routes are in the route table (``routes.py``).

Names stay clear of Ollama's routes (``/api/chat``, ``/api/generate``, ``/api/show``, ``/api/tags``,
``/api/version``, ``/api/ps``), which the Ollama dialect answers on the same port.
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from benchwarmers_mcp import __version__
from benchwarmers_mcp.access.policy import keys_required
from benchwarmers_mcp.admin.body import admin, ctx_of, ok
from benchwarmers_mcp.context import Context
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import endpoints as endpoint_store
from benchwarmers_mcp.store import replicas as replica_store
from benchwarmers_mcp.store import summary as store_summary


def server_url(settings: Settings) -> str:
    if settings.public_url:
        return settings.public_url.rstrip("/")
    host = f"[{settings.bind}]" if ":" in settings.bind else settings.bind
    return f"http://{host}:{settings.port}"


async def keyless(ctx: Context) -> list[str]:
    """Endpoints that call out and have no key anywhere (local ones may not need one)."""
    return [e.name for e in await endpoint_store.list_all(ctx.db)
            if e.api != "simulated" and e.kind != "local" and not ctx.keys.has(e.key_name)]


# The modes the data folder and the store's files are made with: every answer is in them, so only
# their owner reads them. An older install made them 0755 and 0644; ``bench status`` says so.
PRIVATE_FOLDER = 0o700
PRIVATE_FILE = 0o600
STORE_SUFFIXES = ("", "-wal", "-shm", "-journal")


def _loose(path: Path, wanted: int, what: str) -> dict[str, str] | None:
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError:  # not there (yet), or not ours to read: nothing to report
        return None
    if not mode & ~wanted & 0o077:  # nothing granted to the group or others beyond what is wanted
        return None
    return {"path": str(path), "what": what, "mode": f"{mode:04o}", "wanted": f"{wanted:04o}",
            "fix": f"chmod {wanted:o} {path}"}


def loose_modes(s: Settings) -> list[dict[str, str]]:
    """The data folder and the SQLite store's files when others may read them (group or world bits),
    each with the command that fixes it; nothing on a system without POSIX modes."""
    if os.name != "posix":
        return []
    found = [_loose(s.home, PRIVATE_FOLDER, "data folder")]
    if not s.database_url:
        found += [_loose(s.db_path.with_name(s.db_path.name + suffix), PRIVATE_FILE, "store file")
                  for suffix in STORE_SUFFIXES]
    return [f for f in found if f is not None]


@admin
async def status(request: Request) -> Response:
    ctx = ctx_of(request)
    s = ctx.settings
    summary: dict[str, Any] = {
        "version": __version__,
        "url": server_url(s),
        "bind": s.bind,
        "port": s.port,
        "data_folder": str(s.home),
        "config_folder": str(s.config_dir),
        "counts": await store_summary.counts(ctx.db),
        "store": {**ctx.db.where, "version": ctx.db.backend},  # a password in the URL is masked
        "replicas": {"recent": await replica_store.recent(ctx.db, time.time()), "this": ctx.replica,
                     "window_seconds": replica_store.RECENT},
        "endpoints_without_key": await keyless(ctx),
        "auth": {"admin_token": s.admin_token is not None, "keys_required": keys_required(s)},
        "loose_modes": loose_modes(s),
    }
    return ok(summary)
