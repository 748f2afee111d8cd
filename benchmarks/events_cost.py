"""What the live feed costs: a seat written with its event row (the trigger) and without it, and
one tail read of the feed, on a fresh data folder.

    python benchmarks/events_cost.py [--seats 3000] [--quick]

Prints microseconds per seat write with and without the trigger (their difference is what every
seat, verdict and change pays for the live dashboard), and per tail read (``id > ?``, what each
process's watcher does every 0.25 s while a browser listens), empty and with a batch waiting.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import anyio

from benchwarmers_mcp.store import Database, calls
from benchwarmers_mcp.store import events as event_store
from benchwarmers_mcp.store.events import Feed


async def write_seats(db: Database, n: int, tag: str) -> float:
    panel = calls.PanelRecord(calls.new_panel_id(), time.time(), "bench/x", "general", "default", "all", "local",
                              None, "p", [])
    await calls.create_panel(db, panel)
    started = time.perf_counter()
    for i in range(n):
        await calls.record_seat(db, calls.SeatRecord(f"{panel.id}.{tag}{i}", panel.id, f"m{i}", "member", "alpha",
                                                     "ok", 0.1, "answer " * 40))
    return (time.perf_counter() - started) / n * 1e6


async def tail_reads(feed: Feed, after: int, rounds: int = 2000) -> float:
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        await event_store.after(feed.reader, after)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1e6


async def main(seats: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        async with Database(Path(tmp) / "b.db") as db:
            await write_seats(db, 200, "warm")
            trigger = await db.fetchval("SELECT sql FROM sqlite_master WHERE name = 'events_seats'")
            timings: dict[bool, list[float]] = {True: [], False: []}
            for r in range(10):  # alternating, so drift (the WAL growing, the disk) hits both alike
                timings[True].append(await write_seats(db, seats // 10, f"a{r}"))
                await db.write("DROP TRIGGER events_seats")
                timings[False].append(await write_seats(db, seats // 10, f"b{r}"))
                await db.write(trigger)
            with_event, without = statistics.median(timings[True]), statistics.median(timings[False])
            async with Feed(db) as feed:
                head = await feed.head()
                empty = await tail_reads(feed, head)
                batch = await tail_reads(feed, head - 20, 500)
    print(f"seat write with its event row: {with_event:.0f} µs; without: {without:.0f} µs (medians of 10 "
          f"alternating rounds); the event row costs {with_event - without:+.0f} µs a seat")
    print(f"tail read, nothing new: {empty:.0f} µs; with 20 new events: {batch:.0f} µs "
          f"(every 0.25 s per process while a browser listens: {empty * 4 / 1e4:.3f}% of one core)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seats", type=int, default=3000)
    parser.add_argument("--quick", action="store_true", help="200 seats: seconds, for CI (tests/e2e/test_benchmarks_quick.py)")
    args = parser.parse_args()
    anyio.run(main, 200 if args.quick else args.seats)
