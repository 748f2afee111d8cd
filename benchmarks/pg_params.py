"""What PostgreSQL's NUL check costs a statement: ``postgres._bound`` (the one place parameters go to
the driver: a string holding U+0000 is encoded, everything else passes as it is) against the
driver's own client-side work for the same statement.

    python benchmarks/pg_params.py [--url postgresql://...] [--calls 20000] [--quick]

For a seat's row (12 parameters, a 2,800-character answer) and a route turn's (16), it prints the
check's CPU per statement, and, with ``--url`` (a database it may make a table in), the CPU the
process spends on one ``INSERT`` of that row through asyncpg (its encoding, protocol and event
loop; the server's time not counted), so the check's share of a statement. CPU time (the
process's), best of seven: the figures move with the machine, their ratio much less.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable

from benchwarmers_mcp.store.postgres import _bound

SEAT = ("p20260101-000000-abcd.member1", "p20260101-000000-abcd", "member1", "member", "gpt-4.1-mini", "ok", 1.234,
        "A long answer, line after line. " * 88, "", 120, 340, 1767225600.0)
TURN = ("r20260101-000000-abcd", 3, "r20260101-000000-abcd.1", "alpha", "ok", 1.2, 0.3, 0, "stop", 100, 200, 0, "[]",
        "", "local", 1767225600.0)


def per_call(fn: Callable[[], object], calls: int) -> float:
    """CPU seconds per call, the best of seven runs."""
    best = float("inf")
    for _ in range(7):
        started = time.process_time()
        for _ in range(calls):
            fn()
        best = min(best, (time.process_time() - started) / calls)
    return best


async def insert_cost(url: str, calls: int) -> float:
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        await conn.execute("CREATE TEMP TABLE bench_seats (call TEXT, panel TEXT, seat TEXT, label TEXT, alias TEXT,"
                           " status TEXT, seconds DOUBLE PRECISION, answer TEXT, error TEXT, tokens_in BIGINT,"
                           " tokens_out BIGINT, at DOUBLE PRECISION)")
        sql = "INSERT INTO bench_seats VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)"
        best = float("inf")
        for _ in range(7):
            started = time.process_time()
            for _ in range(calls):
                await conn.execute(sql, *SEAT)
            best = min(best, (time.process_time() - started) / calls)
        return best
    finally:
        await conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="a PostgreSQL database to time one INSERT against")
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--quick", action="store_true", help="2,000 calls: seconds, for CI (tests/e2e/test_benchmarks_quick.py)")
    args = parser.parse_args()
    if args.quick:
        args.calls = 2000
    seat = per_call(lambda: _bound(SEAT), args.calls)
    turn = per_call(lambda: _bound(TURN), args.calls)
    print(f"_bound, a seat's 12 parameters: {seat * 1e9:,.0f} ns of CPU")
    print(f"_bound, a route turn's 16 parameters: {turn * 1e9:,.0f} ns of CPU")
    if args.url:
        insert = asyncio.run(insert_cost(args.url, max(200, args.calls // 20)))
        print(f"one INSERT of the seat's row through asyncpg: {insert * 1e6:,.1f} us of this process's CPU;"
              f" the check is {seat / insert:.2%} of it")


if __name__ == "__main__":
    main()
