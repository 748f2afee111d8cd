"""The servers on this store: each one (a process on the data folder, a replica on PostgreSQL)
keeps a row with when it was last seen, so ``bench status`` can say how many are serving.

A server writes its row when it starts and every ``BEAT`` seconds after (``keep_present``), and
deletes it when it stops; a server that died leaves a row that simply stops being recent
(``RECENT`` seconds) and is pruned after a day.
"""

from __future__ import annotations

import os
import secrets
import socket
import time
from collections.abc import Callable
from typing import Any

import anyio
from anyio.abc import TaskStatus

from benchwarmers_mcp.store.db import Database, StoreUnavailable

BEAT = 30.0
RECENT = 3 * BEAT  # a replica seen within this many seconds is serving
FORGET = 86_400.0


def new_id() -> str:
    """This process's name among the replicas: host, pid and a random tail (a pid is reused)."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


async def beat(db: Database, replica: str, now: float) -> None:
    host, _, rest = replica.partition(":")
    pid = int(rest.split(":", 1)[0] or 0)
    await db.write("INSERT INTO replicas (id, host, pid, started, seen) VALUES (?, ?, ?, ?, ?)"
                   " ON CONFLICT (id) DO UPDATE SET seen = excluded.seen", (replica, host, pid, now, now))


async def leave(db: Database, replica: str) -> None:
    await db.write("DELETE FROM replicas WHERE id = ?", (replica,))


async def recent(db: Database, now: float, within: float = RECENT) -> list[dict[str, Any]]:
    rows = await db.fetchall("SELECT id, host, pid, started, seen FROM replicas WHERE seen >= ? ORDER BY started",
                             (now - within,))
    return [dict(r) for r in rows]


async def forget_old(db: Database, now: float) -> int:
    return await db.write("DELETE FROM replicas WHERE seen < ?", (now - FORGET,))


async def keep_present(db: Database, replica: str, clock: Callable[[], float] = time.time,
                       every: float = BEAT, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
    """Beat until cancelled (``await tg.start(keep_present, ...)`` returns once the first beat is
    in the store). A store that does not answer for a while only makes this replica look absent; it
    never stops the server. The row is deleted on the way out."""
    try:
        await forget_old(db, clock())
        await beat(db, replica, clock())
        task_status.started()
        while True:
            await anyio.sleep(every)
            try:
                await beat(db, replica, clock())
            except StoreUnavailable:
                pass  # the next beat tries again
    finally:
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            try:
                await leave(db, replica)
            except StoreUnavailable:
                pass
