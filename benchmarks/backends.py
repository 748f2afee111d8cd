"""Route turns and 3-seat panels at concurrency 20 on each store backend, side by side (issue 19).

    python benchmarks/backends.py [--load 1000] [--concurrency 20] [--reps 3] [--quick]

Starts, in one run, the zero-latency fake upstream (``fastfake.py``), a throwaway PostgreSQL cluster
(``.ci/postgres.sh up``; ``down`` removes it after) and Benchwarmers as real processes on 127.0.0.1:

- ``sqlite``: one server process on its data folder's SQLite;
- ``postgresql x1``: one server process on a PostgreSQL database of its own;
- ``postgresql x3``: three server processes (replicas) on a second database; the load generator
  spreads its connections round-robin over their three ports (no load balancer).

Each repetition measures direct upstream calls, then route turns and panels on every target, in an
order rotated each repetition: rps, p50, p95, errors, and the cost per request in CPU time (user +
system, every thread, from /proc): of the server processes, and on PostgreSQL of the cluster's
processes too (the postmaster, its background workers and the backends of the measured database;
the other database's backends are left out, and backends that exited count through the postmaster's
children time). Figures are medians over ``--reps``. The load average is printed before and after:
the machine is shared, so trust CPU per request over wall time. Nothing leaves 127.0.0.1; every
process and the cluster are stopped on exit, an error or Ctrl-C included.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from hotpath import (  # noqa: E402
    ROOT,
    TICK,
    Figures,
    Load,
    Server,
    body,
    cpu_seconds,
    load,
    loadavg,
    prepare,
    start_upstream,
)

from tests.kits import postgres as pg_kit  # noqa: E402
from tests.kits import store as store_kit  # noqa: E402
from tests.kits.servers import free_port  # noqa: E402

SCRIPT = ROOT / ".ci" / "postgres.sh"
KINDS = (("turn", "route turns", "bench/trio:route"), ("panel", "3-seat panels", "bench/trio"))


# ---- the PostgreSQL cluster --------------------------------------------------------------------

def _exports(stdout: str) -> dict[str, str]:
    lines = [line for line in stdout.splitlines() if line.startswith("export ")]
    return dict(w.split("=", 1) for w in shlex.split(lines[-1])[1:]) if lines else {}


def _down(exports: dict[str, str]) -> None:
    done = subprocess.run(["bash", str(SCRIPT), "down"], env={**os.environ, **exports}, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True)
    if done.returncode != 0:
        print(f"warning: .ci/postgres.sh down failed: {done.stderr[-500:]}", file=sys.stderr)


@contextmanager
def cluster() -> Iterator[dict[str, str]]:
    """``.ci/postgres.sh up`` (in a session of its own: a Ctrl-C waits for it, then stops the cluster)
    and its exports; ``down`` on the way out."""
    proc = subprocess.Popen(["bash", str(SCRIPT), "up"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=900)
    except BaseException:
        out, _ = proc.communicate()
        if _exports(out):
            _down(_exports(out))
        raise
    exports = _exports(out)
    if proc.returncode != 0 or not exports:
        raise RuntimeError(f".ci/postgres.sh up failed ({proc.returncode}): {err[-2000:]}")
    print(*(line.split("] ", 1)[-1] for line in err.splitlines() if "cluster:" in line), flush=True)
    try:
        yield exports
    finally:
        _down(exports)


def _stat(pid: int | str) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


class PostgresMeter:
    """CPU seconds of a cluster's processes, leaving out the backends of some databases."""

    def __init__(self, run: Path) -> None:
        self.postmaster = int((run / "data" / "postmaster.pid").read_text().split()[0])

    def cpu(self, skip: tuple[str, ...] = ()) -> float:
        own = _stat(self.postmaster)  # its own time and its exited children's (fields 14-17)
        ticks = sum(int(own[i]) for i in (11, 12, 13, 14))
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                fields = _stat(entry.name)
                if int(fields[1]) != self.postmaster:
                    continue
                title = Path(f"/proc/{entry.name}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except (FileNotFoundError, ProcessLookupError):
                continue  # it exited between the listing and the read
            if any(f" {name} " in title for name in skip):
                continue
            ticks += int(fields[11]) + int(fields[12])
        return ticks / TICK


# ---- the targets -------------------------------------------------------------------------------

@dataclass
class Target:
    label: str
    servers: list[Server]
    database: str | None = None  # its PostgreSQL database's name (None: SQLite)

    @property
    def ports(self) -> list[int]:
        return [s.port for s in self.servers]

    def meters(self, pg: PostgresMeter | None, others: tuple[str, ...]) -> dict[str, Callable[[], float]]:
        pids = [s.pid for s in self.servers]
        out: dict[str, Callable[[], float]] = {"server": lambda: sum(cpu_seconds(p) for p in pids)}
        if pg is not None and self.database:
            out["postgres"] = lambda: pg.cpu(skip=others)
        return out


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # the same clean-up as Ctrl-C


def start_targets(stack: ExitStack, tmp: Path, upstream_url: str, admin: pg_kit.Cluster) -> list[Target]:
    def server(name: str, home: Path) -> Server:
        s = Server(name, home, free_port(), tmp / f"{name}.log")
        stack.callback(s.stop)
        return s

    lite_home = tmp / "sqlite" / "data"
    lite_home.mkdir(parents=True)
    prepare(lite_home, upstream_url)
    targets = [Target("sqlite, 1 process", [server("sqlite", lite_home)])]
    for label, count in (("postgresql, 1 process", 1), ("postgresql, 3 processes", 3)):
        url = admin.take()  # a clean, migrated database of its own
        home = tmp / f"pg{count}" / "data"  # the replicas share one data folder, as in tests/e2e
        home.mkdir(parents=True)
        store_kit.bind(home, url)
        stack.callback(store_kit.bind, home, None)
        prepare(home, upstream_url)
        targets.append(Target(label, [server(f"pg{count}-{i + 1}", home) for i in range(count)],
                              url.rsplit("/", 1)[1]))
    for t in targets:
        for s in t.servers:
            print(f"  {s.name}: ready in {s.start():.2f} s on port {s.port}", flush=True)
    return targets


# ---- the run -----------------------------------------------------------------------------------

async def repetition(fig: Figures, rep: int, targets: list[Target], up_port: int, up_pid: int,
                     pg: PostgresMeter | None, n: int, c: int) -> None:
    def payload(model: str) -> Callable[[int], bytes]:
        return lambda i: body(model, first=f"worker {i} rep {rep}: say something short.")

    direct = await load(up_port, payload("m1"), n, c, meters={"server": lambda: cpu_seconds(up_pid)})
    record(fig, "direct", direct)
    names = tuple(t.database for t in targets if t.database)
    order = targets[rep % len(targets):] + targets[:rep % len(targets)]
    for t in order:
        meters = t.meters(pg, tuple(name for name in names if name != t.database))
        for kind, _, model in KINDS:
            result = await load(t.ports, payload(model), n // 2 if kind == "panel" else n, c, meters=meters)
            record(fig, f"{t.label}|{kind}", result)
            print(f"  rep {rep + 1} {kind:5} {t.label:24} {result.rps:6.0f} rps"
                  f" {sum(result.metered.values()):6.2f} ms CPU/req ({', '.join(f'{k} {v:.2f}' for k, v in result.metered.items())});"
                  f" load {loadavg().split()[0]}", flush=True)


def record(fig: Figures, key: str, result: Load) -> None:
    for what in ("rps", "p50", "p95", "errors"):
        fig.add(f"{key}.{what}", float(getattr(result, what)))
    for name, value in result.metered.items():
        fig.add(f"{key}.cpu.{name}", value)
    fig.add(f"{key}.cpu.total", sum(result.metered.values()))  # its own median: not the parts' medians summed


def report(fig: Figures, targets: list[Target], c: int) -> None:
    def row(label: str, key: str) -> None:
        g = fig.get
        server = g(f"{key}.cpu.server")
        pg = g(f"{key}.cpu.postgres") if f"{key}.cpu.postgres" in fig.values else None
        errors = int(sum(fig.values[f"{key}.errors"]))
        print(f"{label:44} {g(f'{key}.rps'):7.0f} {g(f'{key}.p50'):8.2f} {g(f'{key}.p95'):8.2f} {errors:6d}"
              f" {server:9.2f} {'-' if pg is None else f'{pg:.2f}':>9} {g(f'{key}.cpu.total'):9.2f}")

    print()
    print(f"c={c}, medians over {len(fig.values['direct.rps'])} repetition(s); CPU is ms per request")
    print(f"{'':44} {'rps':>7} {'p50 ms':>8} {'p95 ms':>8} {'errors':>6} {'server':>9} {'postgres':>9} {'total':>9}")
    row("direct upstream (the fake's own CPU)", "direct")
    for kind, label, _ in KINDS:
        for t in targets:
            row(f"{label}, {t.label}", f"{t.label}|{kind}")
    base = targets[0].label
    print()
    for kind, label, _ in KINDS:
        lite = fig.get(f"{base}|{kind}.cpu.total")
        for t in targets[1:]:
            key = f"{t.label}|{kind}"
            total = fig.get(f"{key}.cpu.total")
            print(f"{label}, {t.label}: {total:.2f} ms of CPU per request against {lite:.2f} on SQLite"
                  f" ({total / lite:.2f}x; rps {fig.get(f'{key}.rps') / fig.get(f'{base}|{kind}.rps'):.2f}x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--load", type=int, default=1000, help="route turns per figure per repetition (panels: half)")
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--reps", type=int, help="repetitions (3; 1 with --quick)")
    parser.add_argument("--warm", type=int, default=200, help="unmeasured turns (and half as many panels) per target first")
    parser.add_argument("--quick", action="store_true", help="a short run: 300 turns and 150 panels, 1 repetition")
    args = parser.parse_args()
    if args.quick:
        args.load, args.warm = 300, 60
    args.reps = args.reps or (1 if args.quick else 3)
    signal.signal(signal.SIGTERM, _on_sigterm)
    print(f"load average at start: {loadavg()} ({os.cpu_count()} cores)", flush=True)
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-backends-")))
        up_port = free_port()
        upstream = start_upstream(up_port)
        stack.callback(lambda: (upstream.terminate(), upstream.wait()))
        began = time.perf_counter()
        exports = stack.enter_context(cluster())
        print(f"PostgreSQL cluster up in {time.perf_counter() - began:.1f} s", flush=True)
        admin = pg_kit.Cluster(exports[pg_kit.URL_VAR])
        stack.callback(admin.finish)  # drops the databases (the cluster itself goes with `down`)
        targets = start_targets(stack, tmp, f"http://127.0.0.1:{up_port}", admin)
        pg = PostgresMeter(Path(exports["BENCHWARMERS_PG_RUN"]))
        for t in targets:
            for kind, _, model in KINDS:
                asyncio.run(load(t.ports, lambda i, m=model: body(m, first=f"warm {i}"),
                                 args.warm // 2 if kind == "panel" else args.warm, args.concurrency))
        print(f"warmed up; load average {loadavg()}", flush=True)
        fig = Figures()
        for rep in range(args.reps):
            asyncio.run(repetition(fig, rep, targets, up_port, upstream.pid, pg, args.load, args.concurrency))
            print(f"repetition {rep + 1} done; load average {loadavg()}", flush=True)
        report(fig, targets, args.concurrency)
    print(f"\nload average at end: {loadavg()}")


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:  # the ExitStack has stopped every server and the cluster by now
        print(f"interrupted; servers, fake upstream and cluster stopped (load average {loadavg()})", file=sys.stderr)
        sys.exit(130)
