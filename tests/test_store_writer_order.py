"""Issue 37.2: writer transactions from two stores on one PostgreSQL database (two replicas) run one
after another, shown deterministically rather than caught by chance: the first holds its
transaction open; the second is seen by PostgreSQL itself waiting on the writer lock (``pg_locks``:
an advisory lock not granted), and enters its body only once the first commits. Without the lock
the second would be inside its transaction at once, which this test reports whatever the timing."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from benchwarmers_mcp.store.db import Database
from benchwarmers_mcp.store.postgres import WRITER_LOCK
from tests.kits.store import store_of

pytestmark = pytest.mark.parametrize("store_backend", ["postgresql"], indirect=True)

WAITING = ("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted "
           "AND ((classid::bigint << 32) | objid::bigint) = ?")


async def _waiting_or_inside(observer: Database, inside: anyio.Event) -> str:
    """Whichever comes first: PostgreSQL shows a writer waiting on the lock, or the second writer is
    in its body. Polls the database, not the clock: no figure here depends on the machine's speed."""
    while True:
        if inside.is_set():
            return "inside"
        if await observer.fetchval(WAITING, (WRITER_LOCK,)):
            return "waiting"


def test_a_second_replicas_writer_waits_for_the_first(home: Path) -> None:
    async def run() -> None:
        async with store_of(home) as first, store_of(home) as second, store_of(home) as observer:
            await first.write("CREATE TABLE IF NOT EXISTS race_probe (id INTEGER PRIMARY KEY, who TEXT)")
            order: list[str] = []
            inside = anyio.Event()

            async def second_writer() -> None:
                async with second.transaction() as tx:
                    inside.set()
                    order.append("second")
                    await tx.execute("INSERT INTO race_probe (id, who) VALUES (2, 'second')")

            async with anyio.create_task_group() as tg:
                async with first.transaction() as tx:
                    await tx.execute("INSERT INTO race_probe (id, who) VALUES (1, 'first')")
                    tg.start_soon(second_writer)
                    with anyio.fail_after(120):  # a bound on a hang, never a measure
                        seen = await _waiting_or_inside(observer, inside)
                    assert seen == "waiting", "the second writer entered its transaction while the first held one"
                    order.append("first")
                # the first committed: only now may the second go on (the task group waits for it)
            assert order == ["first", "second"]
            rows = await observer.fetchall("SELECT id FROM race_probe ORDER BY id")
            assert [row[0] for row in rows] == [1, 2]
            assert not await observer.fetchval(WAITING, (WRITER_LOCK,))

    anyio.run(run)
