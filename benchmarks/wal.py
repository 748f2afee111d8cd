"""The SQLite write-ahead log under steady panels, over time (issue 29, item 2).

    python benchmarks/wal.py [--minutes 30] [--rates 10,100] [--processes 1] [--before REF]
                             [--sample 1] [--every 60] [--cap-mb 2048] [--quick] [--keep]

Starts a zero-latency fake OpenAI upstream (``fastfake.py``) and, for each rate, a Benchwarmers
server (``python -m benchwarmers_mcp serve``, ``hotpath.Server``) on a data folder of its own, seeded
as ``hotpath.py`` seeds it (three models, collection ``trio``, three seats a panel, no explorer).
Every rate runs at the same time, each server asked 3-seat panels (OpenAI chat, whole) at a steady
rate: panel ``i`` is sent at ``start + i / rate`` whether or not the ones before it have answered,
each on a keep-alive connection of a pool (a new one when every connection is busy).

Every ``--sample`` seconds the size of each data folder's ``benchwarmers.db-wal`` is read; the
series is printed side by side at the end, each row the largest size in its ``--every`` seconds,
with each run's largest size, its largest in the first and the second half of the run (a WAL that
grows shows it there), the database's size, the panels answered (and a second: a server that
cannot keep up with its rate answers fewer, and later), their latency (p50, p95, p99, max),
errors, and its servers' CPU per panel answered (user + system, every thread: on a busy machine
the figure to compare versions by). "bounded" says the WAL stayed under ``LIMIT_MB`` for the whole run. Each server runs with
its store's debug lines on (``DEBUG_STORE``): the WAL restarts it logged, and how long each held
the writer (every write that came meanwhile waited for it), are counted from its log.

``--processes N`` runs N servers on each data folder (one SQLite file written by N processes, as
replicas on one host are), the pool's connections dealt to them in turn. ``--before REF`` (a git ref, or ``.``
for the working tree) runs that version too, beside this tree and at the same moment, each rate on
a data folder of its own, built and seeded as ``versions.py`` builds and seeds it; a run whose WAL
passes ``--cap-mb`` is stopped there (a WAL that grows without bound fills the disk), and its series
ends. ``--quick``: 20 seconds, sampled every second, a row every 2 s.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from fastfake import Client  # noqa: E402
from hotpath import Server, body, cpu_seconds, free_port, loadavg, pct, prepare, start_upstream  # noqa: E402

LIMIT_MB = 64.0  # the bound the issue sets: the WAL stays under it under any steady load
# The server runs under this (``Server.wrapper``): its store's debug lines, one a WAL restart, go to
# its log; then ``python -m benchwarmers_mcp serve`` as ever (sys.argv: -c, python, -m, package, serve).
DEBUG_STORE = ("import logging, runpy, sys; logging.getLogger('benchwarmers.store').setLevel(logging.DEBUG);"
               " sys.argv = sys.argv[3:]; runpy.run_module('benchwarmers_mcp', run_name='__main__')")
RESTART_LINE = re.compile(r"WAL restart (done|blocked) after \d+ passive passes: .* the writer held ([\d.]+) ms")
MB = 1_000_000
PANEL = "bench/trio"
POOL = 256  # connections a run may open at most (panels in flight at once)


@dataclass
class Run:
    """One rate on one version: its servers (one data folder), what they answered, its WAL's sizes."""

    version: str  # "this tree", or "before" with --before
    rate: float
    home: Path
    servers: list[Server]
    samples: list[tuple[float, int]] = field(default_factory=list)  # (seconds since start, WAL bytes)
    latencies: list[float] = field(default_factory=list)  # ms, panels answered 200
    errors: int = 0
    refused: int = 0  # panels not sent: POOL connections were all busy
    capped_at: float | None = None  # seconds since start when the WAL passed --cap-mb
    cpu: float = 0.0  # CPU seconds its servers spent while the panels were asked (user + system)

    @property
    def name(self) -> str:
        return f"{self.version} {self.rate:g}/s"

    @property
    def wal(self) -> Path:
        return self.home / "benchwarmers.db-wal"

    def size(self, path: Path) -> int:
        try:
            return path.stat().st_size
        except FileNotFoundError:  # no WAL yet, or between a checkpoint's truncate and the next write
            return 0

    def cpu_now(self) -> float:
        return sum(cpu_seconds(s.pid) for s in self.servers if s.proc is not None)

    def stop(self) -> None:
        for s in self.servers:
            s.stop()

    def restarts(self) -> list[tuple[str, float]]:
        """(done or blocked, ms the writer was held) of each WAL restart its servers logged."""
        found = []
        for s in self.servers:
            text = s.log.read_text(errors="replace") if s.log.exists() else ""
            found += [(m[1], float(m[2])) for m in RESTART_LINE.finditer(text)]
        return found


async def drive(run: Run, seconds: float, started: float) -> None:
    """Panels at ``run.rate`` a second for ``seconds``, each on a free connection of the pool."""
    idle: list[Client] = []
    opened = 0
    tasks: set[asyncio.Task[None]] = set()

    async def panel(i: int) -> None:
        nonlocal opened
        reused = bool(idle)
        if idle:
            client = idle.pop()
        elif opened < POOL:
            opened += 1
            client = Client("127.0.0.1", run.servers[i % len(run.servers)].port)
        else:
            run.refused += 1
            return
        payload = body(PANEL, first=f"panel {i}: say something short.")
        try:
            try:
                r = await client.request("POST", "/v1/chat/completions", payload)
            except ConnectionError:  # a kept connection the server closed while idle: it never saw this
                if not reused:
                    raise
                r = await client.request("POST", "/v1/chat/completions", payload)  # a new connection
            if r.status == 200:
                run.latencies.append(r.total * 1000)
            else:
                run.errors += 1
        except (TimeoutError, OSError, ValueError):
            run.errors += 1
            await client.close()
        idle.append(client)

    i = 0
    while run.capped_at is None:
        due = started + i / run.rate
        if due - started >= seconds:
            break
        delay = due - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        task = asyncio.create_task(panel(i))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
        i += 1
    if tasks:
        await asyncio.wait(tasks)
    for client in idle:
        await client.close()


async def sample(runs: list[Run], seconds: float, every: float, started: float, cap: int,
                 progress: float) -> None:
    """Each run's WAL size every ``every`` seconds; a run whose WAL passes ``cap`` bytes is stopped.
    Every ``progress`` seconds a line on stderr says where each run is."""
    n, told = 0, 0.0
    while True:
        now = time.monotonic() - started
        for run in runs:
            if run.capped_at is None:
                size = run.size(run.wal)
                run.samples.append((now, size))
                if size > cap:
                    run.capped_at = now
                    run.cpu += run.cpu_now()
                    await asyncio.to_thread(run.stop)
        if now - told >= progress:
            told = now
            print(f"{now:6.0f} s, load {loadavg()}: " + ", ".join(
                f"{r.name} WAL {r.samples[-1][1] / MB:.1f} MB, {len(r.latencies)} panels" for r in runs),
                file=sys.stderr, flush=True)
        n += 1
        if now >= seconds:
            return
        await asyncio.sleep(max(0.0, started + n * every - time.monotonic()))


def table(runs: list[Run], seconds: float, every: float) -> None:
    """The series side by side: a row per ``every`` seconds, each the largest size in it (MB)."""
    print(f"\nWAL size (MB), the largest in each {every:g} s:")
    print(f"{'t (s)':>8}" + "".join(f"{r.name:>22}" for r in runs))
    rows = max(1, math.ceil(seconds / every - 1e-9))
    for row in range(rows):
        t, last = row * every, row == rows - 1
        cells = []
        for r in runs:
            inside = [size for at, size in r.samples if t <= at and (at < t + every or last)]
            cells.append(f"{max(inside) / MB:22.1f}" if inside else f"{'(stopped)' if r.capped_at else '':>22}")
        print(f"{min(t + every, seconds):8.0f}" + "".join(cells))


def summary(runs: list[Run], seconds: float) -> None:
    print()
    width = max(len(r.name) for r in runs) + 2
    print(f"{'run':{width}} {'max WAL MB':>10} {'1st half':>9} {'2nd half':>9} {'db MB':>7} {'panels':>7}"
          f" {'a second':>8} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'max ms':>8} {'errors':>6}"
          f" {'CPU ms':>7}  bounded")
    for r in runs:
        sizes = [size for _, size in r.samples] or [0]
        first = [size for at, size in r.samples if at < seconds / 2] or [0]
        second = [size for at, size in r.samples if at >= seconds / 2] or [0]
        lat = r.latencies or [0.0]
        bounded = "yes" if max(sizes) < LIMIT_MB * MB and r.capped_at is None else "NO"
        if r.capped_at is not None:
            bounded += f" (passed the cap at {r.capped_at:.0f} s: stopped)"
        print(f"{r.name:{width}} {max(sizes) / MB:10.1f} {max(first) / MB:9.1f} {max(second) / MB:9.1f}"
              f" {r.size(r.home / 'benchwarmers.db') / MB:7.1f} {len(r.latencies):7d}"
              f" {len(r.latencies) / min(seconds, r.capped_at or seconds):8.1f}"
              f" {statistics.median(lat):8.2f} {pct(lat, 95):8.2f} {pct(lat, 99):8.2f} {max(lat):8.2f}"
              f" {r.errors + r.refused:6d} {r.cpu * 1000 / max(1, len(r.latencies)):7.2f}  {bounded}")
    print()
    for r in runs:
        restarts = r.restarts()
        if not restarts:
            print(f"{r.name}: no WAL restart logged")
            continue
        held = [ms for _, ms in restarts]
        blocked = sum(1 for how, _ in restarts if how == "blocked")
        print(f"{r.name}: {len(restarts)} WAL restarts ({blocked} blocked), the writer held p50 {statistics.median(held):.1f}"
              f" ms, p95 {pct(held, 95):.1f} ms, max {max(held):.1f} ms")
    mine = [r for r in runs if r.version == "this tree"]
    verdict = all(max([s for _, s in r.samples] or [0]) < LIMIT_MB * MB and r.capped_at is None for r in mine)
    print(f"\nthis tree's WAL bounded under {LIMIT_MB:g} MB at every rate: {'yes' if verdict else 'NO'}"
          f" (largest {max(max([s for _, s in r.samples] or [0]) for r in mine) / MB:.1f} MB)")


def start_runs(args: argparse.Namespace, tmp: Path, upstream: str) -> list[Run]:
    """Seed a data folder per version and rate and start its servers; the runs, started."""
    versions: list[tuple[str, str, object]] = [("this tree", sys.executable, None)]
    if args.before:
        import versions as builds

        v = builds.resolve("before", args.before)
        builds.build(v)
        versions.append(("before", str(v.python), v))
    runs: list[Run] = []
    for label, python, v in versions:
        for rate in args.rates:
            slug = f"{label.replace(' ', '-')}-{rate:g}"
            home = tmp / slug / "data"
            if v is None:
                prepare(home, upstream)
            else:
                import versions as builds

                builds.seed(v, home, upstream, tmp / f"{slug}.seed.log")  # type: ignore[arg-type]
            servers = [Server(f"{slug}-{n}", home, free_port(), tmp / f"{slug}-{n}.log", python=python, cwd=tmp,
                              wrapper=(python, "-c", DEBUG_STORE))
                       for n in range(args.processes)]
            run = Run(label, rate, home, servers)
            runs.append(run)
            for s in servers:
                s.start()
    return runs


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0, help="how long each rate runs (all at once)")
    parser.add_argument("--rates", default="10,100", help="panels a second, comma-separated: one run each")
    parser.add_argument("--processes", type=int, default=1, help="servers on each data folder")
    parser.add_argument("--before", metavar="REF", help="also run this version (a git ref, or . for the working tree)")
    parser.add_argument("--sample", type=float, default=1.0, help="seconds between WAL size readings")
    parser.add_argument("--every", type=float, default=60.0, help="seconds a printed row covers")
    parser.add_argument("--cap-mb", type=float, default=2048.0, help="stop a run whose WAL passes this")
    parser.add_argument("--quick", action="store_true", help="20 seconds, a row every 2 s")
    parser.add_argument("--keep", action="store_true", help="keep the data folders and the servers' logs")
    args = parser.parse_args()
    if args.quick:
        args.minutes, args.every = 20 / 60, 2.0
    try:
        args.rates = [float(r) for r in args.rates.split(",") if r.strip()]
    except ValueError:
        parser.error("--rates: numbers, comma-separated (10,100)")
    if not args.rates or min(args.rates) <= 0 or args.processes < 1 or args.minutes <= 0:
        parser.error("--rates above 0, --processes at least 1, --minutes above 0")
    return args


def main() -> None:
    args = arguments()
    seconds = args.minutes * 60
    print(f"load average at start: {loadavg()} ({os.cpu_count()} cores)", flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="bench-wal-"))
    up_port = free_port()
    upstream = start_upstream(up_port)
    runs: list[Run] = []
    try:
        runs = start_runs(args, tmp, f"http://127.0.0.1:{up_port}")
        print(f"{len(runs)} runs of {seconds:g} s: " + ", ".join(r.name for r in runs), flush=True)

        async def everything() -> None:
            for r in runs:
                r.cpu = -r.cpu_now()
            started = time.monotonic()
            await asyncio.gather(sample(runs, seconds, args.sample, started, int(args.cap_mb * MB), args.every),
                                 *(drive(r, seconds, started) for r in runs))
            for r in runs:
                if r.capped_at is None:
                    r.cpu += r.cpu_now()

        asyncio.run(everything())
        table(runs, seconds, args.every)
        summary(runs, seconds)
    finally:
        for r in runs:
            r.stop()
        upstream.terminate()
        upstream.wait()
        if args.keep:
            print(f"data folders and logs kept in {tmp}")
        else:
            subprocess.run(["rm", "-rf", str(tmp)], check=False)
    print(f"\nload average at end: {loadavg()}")


if __name__ == "__main__":
    main()
