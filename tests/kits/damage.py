"""A SQLite store with a record worth saving, and damage done to it the way a disk or a torn copy
does: pages in the middle of the file overwritten with noise."""

from __future__ import annotations

import random
from pathlib import Path

from benchwarmers_mcp.cli.demo import seed_demo
from benchwarmers_mcp.store import Database, calls

PAGE = 4096  # SQLite's default page size, which the store keeps
T0 = 1_800_000_000.0


async def filled_store(path: Path, panels: int = 300) -> None:
    """The demo's bench and ``panels`` judged-looking panels of three seats, each answer ~2 KB, so
    the seats table spans hundreds of pages."""
    async with Database(path) as db:
        await seed_demo(db)
        for p in range(panels):
            panel = calls.PanelRecord(f"p{p:05d}", T0 + p, "bench/demo", "general", "collection", "all", "local",
                                      None, "question " * 20, [])
            await calls.create_panel(db, panel)
            for i, alias in enumerate(("sim-mercury", "sim-lark", "sim-mole")):
                await calls.record_seat(db, calls.SeatRecord(f"{panel.id}.member{i}", panel.id, f"member{i}",
                                                             "member", alias, "ok", 0.5, f"answer {p} " * 250,
                                                             at=T0 + p))


def damage_middle(path: Path, pages: int = 4, seed: int = 31) -> list[int]:
    """Overwrite ``pages`` pages at the middle of the file with random bytes; their page numbers."""
    count = path.stat().st_size // PAGE
    first = count // 2
    noise = random.Random(seed)
    with open(path, "r+b") as f:
        for page in range(first, first + pages):
            f.seek(page * PAGE)
            f.write(noise.randbytes(PAGE))
    return list(range(first + 1, first + pages + 1))  # SQLite numbers pages from 1
