"""What a rating read costs as the bench's history grows: ``learning.ratings_for`` over an explorer
panel's pool and over a route turn's members, with no history, with suite answers, with days of
health tallies. CPU of this process (``time.process_time``, the least of 5 blocks).

    python benchmarks/evidence_cost.py [--models 43] [--reads 50]

Every explorer panel rates its whole pool and a conversation's first route turn rates its members,
so these costs are paid on the hot path. A store in a temporary folder (SQLite); suite answers
and health tallies are written through the store's own functions, so each case is made in seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchwarmers_mcp.engine import learning  # noqa: E402
from benchwarmers_mcp.store import Database, endpoints, models, ratings  # noqa: E402
from benchwarmers_mcp.store import suite as suite_store  # noqa: E402
from benchwarmers_mcp.store.endpoints import Endpoint  # noqa: E402
from benchwarmers_mcp.store.models import ModelRecord  # noqa: E402
from benchwarmers_mcp.store.suite import AnswerRow  # noqa: E402

BLOCKS = 5
CASES = (("no history", 0, 0), ("100 suite answers a model", 100, 0), ("30 days of health a model", 0, 30),
         ("a year of health a model", 0, 365))


async def history(db: Database, aliases: list[str], answers: int, days: int) -> None:
    now = time.time()
    for alias in aliases:
        for k in range(answers):
            await suite_store.record_answer(db, AnswerRow(alias, f"t{k}", "ok", True, "found" if k % 2 else "missed",
                                                          "", "", at=now - k * 3600))
    today = int(now // 86400)
    async with db.transaction() as tx:
        await ratings.tally_many(tx, ((alias, today - d, 50, 2) for alias in aliases for d in range(days)))


async def cost(db: Database, aliases: list[str], reads: int) -> float:
    for _ in range(5):
        await learning.ratings_for(db, "bench/core", "general", aliases)
    best = float("inf")
    for _ in range(BLOCKS):
        began = time.process_time()
        for _ in range(reads):
            await learning.ratings_for(db, "bench/core", "general", aliases)
        best = min(best, (time.process_time() - began) / reads)
    return best * 1000


async def case(n_models: int, reads: int, answers: int, days: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        async with Database(Path(tmp) / "bench.db") as db:
            await endpoints.add(db, Endpoint("up", "http://127.0.0.1:9/v1"))
            aliases = [f"m{i}" for i in range(n_models)]
            for alias in aliases:
                await models.register(db, ModelRecord(alias, alias, "up", alias))
            await history(db, aliases, answers, days)
            return await cost(db, aliases, reads), await cost(db, aliases[:3], reads)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", type=int, default=43)
    parser.add_argument("--reads", type=int, default=50)
    args = parser.parse_args()
    print(f"{'history':32} {f'pool of {args.models} (ms)':>18} {'3 members (ms)':>16}")
    for label, answers, days in CASES:
        pool, members = asyncio.run(case(args.models, args.reads, answers, days))
        print(f"{label:32} {pool:18.2f} {members:16.2f}")


if __name__ == "__main__":
    main()
