"""What a rating read costs as the bench's history grows: ``learning.ratings_for`` over an explorer
panel's pool and over a route turn's members, with no history, with suite answers, with days of
health tallies. CPU of this process per read (``time.process_time``, the least of 5 blocks).

    python benchmarks/evidence_cost.py [--models 43] [--reads 50] [--quick]

Every explorer panel rates its whole pool and a conversation's first route turn rates its members,
so these costs are paid on the hot path. A store in a temporary folder (SQLite); suite answers
and health tallies are written through the store's own functions, so each case is made in seconds.

Health evidence is kept between reads (``store/health_evidence.py``), so a year of it costs what
the rows changed since the last read cost. Two more cases show what that leaves: "a call before
each read" writes a seat (not timed) before every read, as a busy bench does, so each read folds
in a changed row; "first read of a day" reads each time on the next day, so each read builds the
kept sums from the whole table again (what each process pays once a day).
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
from benchwarmers_mcp.store import Database, calls, endpoints, models, ratings  # noqa: E402
from benchwarmers_mcp.store import suite as suite_store  # noqa: E402
from benchwarmers_mcp.store.calls import PanelRecord, SeatRecord  # noqa: E402
from benchwarmers_mcp.store.endpoints import Endpoint  # noqa: E402
from benchwarmers_mcp.store.models import ModelRecord  # noqa: E402
from benchwarmers_mcp.store.suite import AnswerRow  # noqa: E402

BLOCKS = 5
DAY = 86400.0
# label, suite answers a model, days of health a model, what happens before each read
CASES = (("no history", 0, 0, ""), ("100 suite answers a model", 100, 0, ""),
         ("30 days of health a model", 0, 30, ""), ("a year of health a model", 0, 365, ""),
         ("a year, a call before each read", 0, 365, "call"), ("a year, first read of a day", 0, 365, "day"))


async def history(db: Database, aliases: list[str], answers: int, days: int) -> None:
    now = time.time()
    for alias in aliases:
        for k in range(answers):
            await suite_store.record_answer(db, AnswerRow(alias, f"t{k}", "ok", True, "found" if k % 2 else "missed",
                                                          "", "", at=now - k * 3600))
    today = int(now // 86400)
    async with db.transaction() as tx:
        await ratings.tally_many(tx, ((alias, today - d, 50, 2) for alias in aliases for d in range(days)))
    await calls.create_panel(db, PanelRecord("p1", now, "bench/core", "general", "default", "all", "local", None,
                                             "q", []))


async def cost(db: Database, aliases: list[str], reads: int, before: str) -> float:
    """CPU per read in ms, the least of ``BLOCKS`` blocks; ``before`` each read (not timed): a
    call written ("call"), or the clock a day on ("day")."""
    n = 0

    async def read() -> float:
        nonlocal n
        n += 1
        now = time.time()
        if before == "call":
            alias, call = aliases[n % len(aliases)], f"c{len(aliases)}.{n}"
            await calls.record_seat(db, SeatRecord(call, "p1", call, alias, alias, "ok", 0.1, at=now))
        elif before == "day":
            now += n * DAY
        began = time.process_time()
        await learning.ratings_for(db, "bench/core", "general", aliases, now=now)
        return time.process_time() - began

    for _ in range(5):
        await read()
    best = float("inf")
    for _ in range(BLOCKS):
        best = min(best, sum([await read() for _ in range(reads)]) / reads)
    return best * 1000


async def case(n_models: int, reads: int, answers: int, days: int, before: str) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        async with Database(Path(tmp) / "bench.db") as db:
            await endpoints.add(db, Endpoint("up", "http://127.0.0.1:9/v1"))
            aliases = [f"m{i}" for i in range(n_models)]
            for alias in aliases:
                await models.register(db, ModelRecord(alias, alias, "up", alias))
            await history(db, aliases, answers, days)
            return await cost(db, aliases, reads, before), await cost(db, aliases[:3], reads, before)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", type=int, default=43)
    parser.add_argument("--reads", type=int, default=50)
    parser.add_argument("--quick", action="store_true", help="8 models, 3 reads: seconds, for CI"
                        " (tests/e2e/test_benchmarks_quick.py)")
    args = parser.parse_args()
    if args.quick:
        args.models, args.reads = 8, 3
    print(f"{'history':32} {f'pool of {args.models} (ms)':>18} {'3 members (ms)':>16}")
    for label, answers, days, before in CASES:
        pool, members = asyncio.run(case(args.models, args.reads, answers, days, before))
        print(f"{label:32} {pool:18.2f} {members:16.2f}")


if __name__ == "__main__":
    main()
