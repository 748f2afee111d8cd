"""The store statements one request costs: Benchwarmers in-process (uvicorn in this process) with
SQLite's trace callback on, against the zero-latency fake upstream, and a count per statement.

    python benchmarks/sqltrace.py [--kind turn|stream|panel] [--requests 50] [--profile PATH] [--timing] [--quick]

Prints each statement (first 110 characters) with how many times it ran per request, after a
warm-up; the total is the number of aiosqlite hops (each one a trip to its thread) per request.
``--timing`` times each statement the store runs itself instead (CPU time in sqlite3, triggers
included, no trace callback): microseconds per request and per run, the costliest first.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import cProfile
import pstats
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import uvicorn  # noqa: E402
from fastfake import Client  # noqa: E402
from hotpath import body, prepare, start_upstream  # noqa: E402

from benchwarmers_mcp.store import sqlite as store_db  # noqa: E402
from tests.kits.servers import free_port, server_env  # noqa: E402

SEEN: collections.Counter[str] = collections.Counter()
SPENT: collections.Counter[str] = collections.Counter()  # --timing: seconds per statement
OFF_LOOP: collections.Counter[str] = collections.Counter()  # statements that went to a thread


def _count_off_loop() -> None:
    in_thread, threaded = store_db._Inline.in_thread, store_db.SqliteDatabase._threaded_reader

    async def counted_in_thread(self: store_db._Inline, fn: object) -> object:
        OFF_LOOP["writer in a thread"] += 1
        return await in_thread(self, fn)  # type: ignore[arg-type]

    async def counted_threaded(self: store_db.SqliteDatabase) -> object:
        OFF_LOOP["read on the threaded reader"] += 1
        return await threaded(self)

    store_db._Inline.in_thread = counted_in_thread  # type: ignore[method-assign,assignment]
    store_db.SqliteDatabase._threaded_reader = counted_threaded  # type: ignore[method-assign,assignment]


def _trace(sql: str) -> None:
    """SQLite hands the statement with its values bound: count the shape, not the values."""
    shape = re.sub(r"'(?:[^']|'')*'|\b\d+(?:\.\d+)?(?:e-?\d+)?\b", "?", " ".join(sql.split()))
    SEEN[shape[:110]] += 1


def _time_statements() -> None:
    """Wrap the store's two statement runners so each run is timed by its SQL (as written)."""
    rows, changes = store_db._rows, store_db._changes

    def timed(runner: Any) -> Any:
        def wrap(conn: object, sql: str, params: object) -> Any:
            fn = runner(conn, sql, params)
            shape = " ".join(sql.split())[:110]

            def run() -> object:
                began = time.thread_time()  # CPU time of this thread: the machine's load leaves it be
                try:
                    return fn()
                finally:
                    SPENT[shape] += time.thread_time() - began
                    SEEN[shape] += 1
            return run
        return wrap

    store_db._rows = timed(rows)
    store_db._changes = timed(changes)


_open = store_db.SqliteDatabase.open


async def _traced_open(self: store_db.SqliteDatabase) -> store_db.SqliteDatabase:
    out = await _open(self)
    for side in (self._writer, self._reader):
        if side is not None:
            side.conn.set_trace_callback(_trace)
    return out


async def run(args: argparse.Namespace, home: Path) -> None:
    from benchwarmers_mcp.app import create_app
    from benchwarmers_mcp.settings import Settings

    port = free_port()
    settings = Settings.from_env(server_env(home, port))
    server = uvicorn.Server(uvicorn.Config(create_app(settings), host="127.0.0.1", port=port,
                                           log_level="warning", access_log=False, lifespan="on"))
    task = asyncio.create_task(server.serve())
    while not server.started:  # noqa: ASYNC110 (uvicorn sets a flag, no event)
        await asyncio.sleep(0.01)
    model = "bench/trio" if args.kind == "panel" else "bench/trio:route"
    payload = body(model, stream=args.kind == "stream")
    client = Client("127.0.0.1", port)
    for _ in range(10):
        await client.request("POST", "/v1/chat/completions", payload)
    await asyncio.sleep(0.2)
    SEEN.clear()
    SPENT.clear()
    OFF_LOOP.clear()
    profiler = cProfile.Profile() if args.profile else None
    if profiler:
        profiler.enable()
    took = []
    for _ in range(args.requests):
        r = await client.request("POST", "/v1/chat/completions", payload)
        assert r.status == 200, r.body
        took.append(r.total * 1000)
    await asyncio.sleep(0.3)  # background writes after the reply
    if profiler:
        profiler.disable()
        profiler.dump_stats(args.profile)
        stats = pstats.Stats(args.profile)
        stats.sort_stats("tottime").print_stats(30)
        stats.sort_stats("cumtime").print_stats(60)
    await client.close()
    server.should_exit = True
    await task
    total = sum(SEEN.values())
    print(f"p50 {statistics.median(took):.2f} ms, in-process (the client shares the loop)")
    print(f"{total / args.requests:.1f} statements per {args.kind} request")
    if args.timing:
        print(f"{sum(SPENT.values()) * 1e6 / args.requests:.0f} µs in sqlite3 per request"
              " (µs per request, runs per request, µs per run)")
        for sql, spent in SPENT.most_common():
            print(f"{spent * 1e6 / args.requests:7.1f} {SEEN[sql] / args.requests:5.2f}"
                  f" {spent * 1e6 / SEEN[sql]:7.1f}  {sql}")
        print("off the event loop:", dict(OFF_LOOP) or "none")
        return
    for sql, n in SEEN.most_common():
        print(f"{n / args.requests:6.2f}  {sql}")
    print("off the event loop:", dict(OFF_LOOP) or "none")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", default="turn", choices=("turn", "stream", "panel"))
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--profile", metavar="PATH", help="cProfile the event loop's thread (the client too) to PATH")
    parser.add_argument("--timing", action="store_true", help="time each statement instead of tracing it")
    parser.add_argument("--quick", action="store_true", help="5 requests: seconds, for CI (tests/e2e/test_benchmarks_quick.py)")
    args = parser.parse_args()
    if args.quick:
        args.requests = 5
    if args.timing:
        _time_statements()
    else:
        store_db.SqliteDatabase.open = _traced_open  # type: ignore[method-assign]
    _count_off_loop()
    with tempfile.TemporaryDirectory(prefix="bench-sqltrace-") as tmp:
        up_port = free_port()
        upstream = start_upstream(up_port)
        try:
            home = Path(tmp) / "data"
            prepare(home, f"http://127.0.0.1:{up_port}")
            began = time.perf_counter()
            asyncio.run(run(args, home))
            print(f"({time.perf_counter() - began:.1f} s)")
        finally:
            upstream.terminate()
            upstream.wait()
            subprocess.run(["true"], check=False)


if __name__ == "__main__":
    main()
