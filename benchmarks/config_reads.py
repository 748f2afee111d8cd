"""The configuration reads of one route turn, alone, in this process: CPU per turn and statements.

    python benchmarks/config_reads.py [--quick] [--turns 5000] [--models 3] [--shared] [--database-url postgresql://...]

A store (SQLite in a temporary folder unless ``--database-url``) with one endpoint, ``--models``
models and a collection of them; then, per turn, what a route turn reads of them: the collection,
the endpoints, the models, the learning settings and the gate of its member. Prints the CPU time
of this process per turn (``time.process_time``, the least of 5 blocks: the machine's other work
only adds to it; on PostgreSQL the server's CPU is not in it), the wall time, and the statements
per turn, with nothing changed between turns, and after a change every 10 turns.
Uses only the store's public functions, so it runs on any commit (``PYTHONPATH=<checkout>/src``).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchwarmers_mcp.store import Database, collections, endpoints, limits, models, ratings  # noqa: E402
from benchwarmers_mcp.store.collections import Collection  # noqa: E402
from benchwarmers_mcp.store.endpoints import Endpoint  # noqa: E402
from benchwarmers_mcp.store.models import ModelRecord  # noqa: E402

BLOCKS = 5


def count_statements(db: Database) -> list[int]:
    """Counts the store's top-level reads and writes on ``db`` (``fetchval`` answers through ``fetchone``)."""
    seen = [0]
    depth = [0]
    for name in ("fetchall", "fetchone", "fetchval", "write"):
        def counted(fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
            async def run(sql: str, params: Any = ()) -> Any:
                seen[0] += depth[0] == 0
                depth[0] += 1
                try:
                    return await fn(sql, params)
                finally:
                    depth[0] -= 1
            return run
        setattr(db, name, counted(getattr(db, name)))
    return seen


async def turn(db: Database, member: str, shared: bool = False) -> None:
    if shared:  # one stamp read for the turn's reads (``config_version.shared``: on a branch that has it)
        from benchwarmers_mcp.store import config_version
        with config_version.shared(db):
            await turn(db, member)
        return
    await collections.get(db, "trio")
    await endpoints.list_all(db)
    await models.list_all(db)
    await ratings.learning_settings(db)
    await limits.gate(db, "up", member, time.time())


async def run(target: Path | str, turns: int, n_models: int, shared: bool) -> None:
    async with Database(target) as db:
        await endpoints.add(db, Endpoint("up", "http://127.0.0.1:9/v1", headers={"x-team": "a"}))
        aliases = [f"m{i}" for i in range(1, n_models + 1)]
        for alias in aliases:
            await models.register(db, ModelRecord(alias, f"vendor/{alias}", "up", "", context_window=32000,
                                                  options={"temperature": 0.2}))
        await collections.save(db, Collection("trio", tuple(aliases[:3])))
        for label, change_every in (("nothing changed", 0), ("a change every 10 turns", 10)):
            for _ in range(50):
                await turn(db, "m1", shared)
            blocks, walls = [], []
            for _ in range(BLOCKS):  # the least CPU of several blocks: the machine's other work only adds
                spent = wall = 0.0
                for i in range(turns // BLOCKS):
                    if change_every and i % change_every == 0:  # not counted: only the turns' reads are
                        await models.update(db, "m2", role="code" if i % (2 * change_every) else "general")
                    cpu, began = time.process_time(), time.perf_counter()
                    await turn(db, "m1", shared)
                    spent += time.process_time() - cpu
                    wall += time.perf_counter() - began
                blocks.append(spent / (turns // BLOCKS))
                walls.append(wall / (turns // BLOCKS))
            statements = await counted(db, shared, change_every)
            print(f"{label}: {min(blocks) * 1e6:6.1f} µs CPU per turn (median block {sorted(blocks)[BLOCKS // 2] * 1e6:.1f}),"
                  f" {min(walls) * 1e6:.0f} µs wall,"
                  f" {statements:.2f} statements per turn ({db.backend}, {n_models} models, {turns} turns"
                  f"{', shared' if shared else ''})")


async def counted(db: Database, shared: bool, change_every: int, turns: int = 200) -> float:
    """Statements per turn, on a store of its own counting them (the counting costs CPU itself)."""
    async with Database(db.target) as other:
        seen = count_statements(other)
        total = 0
        for i in range(turns):
            if change_every and i % change_every == 0:
                await models.update(db, "m2", role="code" if i % (2 * change_every) else "general")
            before = seen[0]
            await turn(other, "m1", shared)
            total += seen[0] - before
    return total / turns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=5000)
    parser.add_argument("--models", type=int, default=3)
    parser.add_argument("--shared", action="store_true", help="each turn's reads in one config_version.shared scope")
    parser.add_argument("--database-url", help="a PostgreSQL database to use (it is written to)")
    parser.add_argument("--quick", action="store_true", help="300 turns: seconds, for CI (tests/e2e/test_benchmarks_quick.py)")
    args = parser.parse_args()
    if args.quick:
        args.turns = 300
    with tempfile.TemporaryDirectory(prefix="bench-config-") as tmp:
        target: Path | str = args.database_url or Path(tmp) / "benchwarmers.db"
        asyncio.run(run(target, args.turns, args.models, args.shared))


if __name__ == "__main__":
    main()
