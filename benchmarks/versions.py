"""Two versions of Benchwarmers side by side in one run (issue 11's benchmark: no figure worse).

    python benchmarks/versions.py [--before 1524273] [--after HEAD] [--requests 300] [--load 1000]
                                  [--concurrency 20] [--reps 3] [--slices 4] [--quick]

``--before`` and ``--after`` take any git ref, or ``.`` for the working tree as it is (tracked and
untracked files that git does not ignore). Each version is exported with ``git archive`` into
``~/.cache/benchwarmers-versions/<sha>/src`` and installed, non-editable and with the dependencies
its own ``pyproject.toml`` asks for, into a venv beside it; the next run reuses both (a working
tree is keyed by the sha of its tree, so an unchanged tree is not rebuilt).

Both servers run as real processes (``python -m benchwarmers_mcp serve``, each under its own
venv's interpreter) on 127.0.0.1 against one zero-latency fake upstream (``fastfake.py``), each
seeded by its own code (its ``tests`` seed kit and store run by its own interpreter): three models
m1..m3 on one endpoint, collection ``trio`` of the three, ``max_calls=3, max_explorers=0`` so a
panel has exactly 3 seats. Then, every figure interleaved so a direct call and both versions see
the same moment of the machine (sequential: one call to each in turn; concurrency: the load cut
into ``--slices`` slices run in rotating order) and the median over ``--reps``:

- route turn, sequential p50/p95 (added ms over a direct call), streamed route turn first byte,
  3-seat panel p50/p95 (added over one direct call), the server's CPU per request;
- route turns and 3-seat panels at concurrency 20: rps, p50, p95, errors, server CPU per request;
- a last column "after vs before": the median over repetitions of the paired change.

On a shared machine trust the CPU-per-request figures over wall time: the load average is printed
at the start, after each repetition and at the end. Every process started here is stopped on exit.
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import io
import json
import os
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from hotpath import (  # noqa: E402
    ROOT,
    Figures,
    Load,
    Server,
    body,
    caller,
    cpu_seconds,
    free_port,
    interleaved,
    load,
    loadavg,
    pct,
    rss_mib,
    start_upstream,
)

CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "benchwarmers-versions"
TURN, PANEL = "bench/trio:route", "bench/trio"

# Run by each version's own interpreter with its source folder on PYTHONPATH: that version's seed
# kit (tests/kits/seed.py since issue 11, tests/seed.py before) and its own store API.
SEED = """
import asyncio, sys
from pathlib import Path
src, home, upstream = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
if (src / "tests" / "kits" / "seed.py").exists():
    from tests.kits.seed import seed
else:
    from tests.seed import seed
seed(home, base_url=upstream + "/v1", served=["m1", "m2", "m3"], collections={"trio": ["m1", "m2", "m3"]})
from benchwarmers_mcp.store import Database
from benchwarmers_mcp.store import collections as cs

async def settle():
    async with Database(home / "benchwarmers.db") as db:
        await cs.save_gateway_settings(db, cs.GatewaySettings(max_calls=3, max_explorers=0))
        assert (await cs.get(db, "trio")).members == ("m1", "m2", "m3")
        assert (await cs.gateway_settings(db)).max_explorers == 0

asyncio.run(settle())
"""

# The installed distributions of an interpreter, to say where two versions' dependencies differ.
FREEZE = "import importlib.metadata as m; print('\\n'.join(sorted(f'{d.name}=={d.version}' for d in m.distributions())))"


# ---- versions ----------------------------------------------------------------------------------

def git(*args: str, env: dict[str, str] | None = None) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


@dataclass
class Version:
    label: str  # before / after
    ref: str  # as given on the command line
    key: str  # the commit sha, or tree-<sha> for a working tree
    treeish: str  # what git archive exports
    describe: str  # one line for the report

    @property
    def home(self) -> Path:
        return CACHE / self.key

    @property
    def src(self) -> Path:
        return self.home / "src"

    @property
    def python(self) -> Path:
        return self.home / "venv" / "bin" / "python"


def resolve(label: str, ref: str) -> Version:
    if ref == ".":
        with tempfile.TemporaryDirectory(prefix="bench-versions-index-") as tmp:
            env = {**os.environ, "GIT_INDEX_FILE": str(Path(tmp) / "index")}
            git("read-tree", "HEAD", env=env)
            git("add", "-A", env=env)
            tree = git("write-tree", env=env)
        head = git("rev-parse", "--short", "HEAD")
        dirty = "" if tree == git("rev-parse", "HEAD^{tree}") else " + uncommitted changes"
        return Version(label, ref, f"tree-{tree}", tree, f"working tree (HEAD {head}{dirty})")
    try:
        sha = git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    except subprocess.CalledProcessError:
        raise SystemExit(f"--{label}: {ref!r} is not a commit in {ROOT} (a git ref, or . for the working tree)") from None
    subject = git("log", "-1", "--format=%h %s", sha)
    return Version(label, ref, sha, sha, f"{ref} = {subject[:80]}")


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """One builder of a cached version at a time (another run may be building it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def build(v: Version) -> None:
    """Export the version and install it into its own venv, unless the cache already holds both."""
    ready = v.home / "ready"
    with locked(CACHE / f"{v.key}.lock"):
        if ready.exists() and v.python.exists():
            print(f"{v.label}: cached venv {v.home}", flush=True)
            return
        began = time.perf_counter()
        print(f"{v.label}: exporting {v.treeish[:12]} and installing it into {v.home}/venv ...", flush=True)
        if v.home.exists():
            subprocess.run(["rm", "-rf", str(v.home)], check=True)  # a build cut short last time
        v.src.mkdir(parents=True)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", v.treeish],
                                 check=True, capture_output=True).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(v.src, filter="data")
        subprocess.run([sys.executable, "-m", "venv", str(v.home / "venv")], check=True)
        with open(v.home / "build.log", "ab") as out:
            installed = subprocess.run([str(v.python), "-m", "pip", "install", "--disable-pip-version-check",
                                        str(v.src)], stdout=out, stderr=subprocess.STDOUT, check=False)
        if installed.returncode:
            raise SystemExit(f"{v.label}: pip install failed; see {v.home / 'build.log'}")
        ready.write_text(f"{v.describe}\n")
        print(f"{v.label}: installed in {time.perf_counter() - began:.0f} s", flush=True)


def prune(keep: list[Version]) -> None:
    """Remove the cached versions (about 100 MiB each) other than ``keep``."""
    kept = {v.key for v in keep}
    for path in sorted(CACHE.iterdir()):
        key = path.name.removesuffix(".lock")
        if key not in kept:
            with locked(CACHE / f"{key}.lock"):
                subprocess.run(["rm", "-rf", str(CACHE / key)], check=True)
            (CACHE / f"{key}.lock").unlink(missing_ok=True)
            print(f"pruned {key}")


def freeze(v: Version) -> dict[str, str]:
    out = subprocess.run([str(v.python), "-c", FREEZE], check=True, capture_output=True, text=True).stdout
    return dict(line.split("==", 1) for line in out.splitlines() if "==" in line)


def dependency_changes(before: Version, after: Version) -> str:
    a, b = freeze(before), freeze(after)
    skip = {"benchwarmers", "pip", "setuptools"}
    changes = [f"+{n} {b[n]}" for n in sorted(b.keys() - a.keys() - skip)]
    changes += [f"-{n}" for n in sorted(a.keys() - b.keys() - skip)]
    changes += [f"{n} {a[n]}->{b[n]}" for n in sorted(a.keys() & b.keys() - skip) if a[n] != b[n]]
    return ", ".join(changes) or "none"


def seed(v: Version, home: Path, upstream: str, log: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    env = {k: val for k, val in os.environ.items() if not k.startswith(("BENCHWARMERS_", "BENCH_", "PYTHON"))}
    env["PYTHONPATH"] = str(v.src)
    with open(log, "ab") as out:
        subprocess.run([str(v.python), "-c", SEED, str(v.src), str(home), upstream], check=True, env=env,
                       cwd=home.parent, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


def check_seats(server: Server) -> None:
    """A panel on ``server`` has exactly the three members as seats, each answered (no explorer)."""
    async def ask() -> bytes:
        client, call = caller(server.port, body(PANEL))
        try:
            return (await call()).body
        finally:
            await client.close()

    seats = json.loads(asyncio.run(ask())).get("bench", {}).get("seats", [])
    got = sorted((seat.get("alias"), seat.get("status")) for seat in seats)
    if got != [("m1", "ok"), ("m2", "ok"), ("m3", "ok")]:
        raise SystemExit(f"{server.name}: a panel seated {got}, not m1..m3 answered; see {server.log}")
    server.served += 1


# ---- measuring ---------------------------------------------------------------------------------

def rotated(items: list[Server], by: int) -> list[Server]:
    by %= len(items)
    return items[by:] + items[:by]


async def sequential(fig: Figures, direct: Server, servers: list[Server], n: int, rep: int) -> None:
    """One repetition: route turn, streamed route turn, 3-seat panel; each against a direct call."""
    for kind, model, stream in (("turn", TURN, False), ("stream", TURN, True), ("panel", PANEL, False)):
        order = rotated([direct, *servers], rep)
        pairs = [caller(s.port, body("m1" if s is direct else model, stream=stream)) for s in order]
        cpu = [cpu_seconds(s.pid) for s in order]
        results = await interleaved([call for _, call in pairs], n)
        for (client, _), s, used in zip(pairs, order, cpu, strict=True):
            await client.close()
            s.served += n + 10
            fig.add(f"{kind}.cpu.{s.name}", (cpu_seconds(s.pid) - used) * 1000 / (n + 10))
        for s, responses in zip(order, results, strict=True):
            for what in ("total", "ttfb") if stream else ("total",):
                values = [getattr(r, what) * 1000 for r in responses]
                fig.add(f"{kind}.{what}.{s.name}.p50", statistics.median(values))
                fig.add(f"{kind}.{what}.{s.name}.p95", pct(values, 95))


def pooled(parts: list[Load]) -> Load:
    latencies = [ms for part in parts for ms in part.latencies]
    errors = sum(part.errors for part in parts)
    seconds = sum(part.seconds for part in parts)
    cpu = sum((part.cpu_ms or 0.0) * (len(part.latencies) + part.errors) for part in parts)
    return Load(len(latencies) / seconds if seconds else 0.0, statistics.median(latencies) if latencies else 0.0,
                pct(latencies, 95) if latencies else 0.0, errors, cpu / max(1, len(latencies) + errors),
                latencies=latencies, seconds=seconds)


async def concurrent(fig: Figures, direct: Server, servers: list[Server], n: int, c: int, slices: int,
                     rep: int) -> None:
    """One repetition at concurrency ``c``: route turns, then 3-seat panels, the load in rotating slices."""
    for kind, model, count in (("turn", TURN, n), ("panel", PANEL, n // 2)):
        def payload(model: str) -> Callable[[int], bytes]:
            return lambda i: body(model, first=f"worker {i}: say something short.")

        parts: dict[str, list[Load]] = {s.name: [] for s in (direct, *servers)}
        for part in range(slices):
            for s in rotated([direct, *servers], rep + part):
                result = await load(s.port, payload("m1" if s is direct else model), max(c, count // slices), c, s.pid)
                parts[s.name].append(result)
                s.served += len(result.latencies) + result.errors + c
        for name, loads in parts.items():
            result = pooled(loads)
            for what in ("rps", "p50", "p95", "errors", "cpu_ms"):
                fig.add(f"c.{kind}.{what}.{name}", float(getattr(result, what) or 0.0))
            # the share of a core the server got: below its neighbours' when it waits, or when
            # the scheduler gives a process of fewer runnable threads less of a busy machine
            fig.add(f"c.{kind}.cores.{name}", (result.cpu_ms or 0.0) * (len(result.latencies) + result.errors)
                    / 1000 / result.seconds if result.seconds else 0.0)


# ---- the report --------------------------------------------------------------------------------

def change(fig: Figures, key: str, added_from: str | None, higher_is_better: bool | None) -> str:
    """The median over repetitions of the paired change after vs before (and its range)."""
    before, after = fig.values[key.format("before")], fig.values[key.format("after")]
    if added_from:  # figures given as ms added over the direct call: the change in added ms
        direct = fig.values[added_from]
        deltas = [(a - d) - (b - d) for a, b, d in zip(after, before, direct, strict=True)]
        mid, unit = statistics.median(deltas), " ms"
    else:
        deltas = [a / b - 1 if b else 0.0 for a, b in zip(after, before, strict=True)]
        mid, unit = statistics.median(deltas) * 100, "%"
    better = mid > 0 if higher_is_better else mid < 0
    word = "same" if abs(mid) < 1e-9 else ("better" if better else "worse")
    if higher_is_better is None:
        word = ""
    spread = ""
    if len(deltas) > 1:
        scale = 1 if added_from else 100
        spread = f" [{min(deltas) * scale:+.2f}..{max(deltas) * scale:+.2f}]"
    return f"{mid:+.2f}{unit}{spread} {word}"


def report(fig: Figures, versions: list[Version], extra: dict[str, dict[str, float]], c: int) -> None:
    g = fig.get
    print()
    for v in versions:
        print(f"{v.label:7} {v.describe}")
    print()
    print(f"{'figure':46} {'direct':>9} {'before':>9} {'after':>9}   after vs before")

    def added(label: str, key: str, p: str) -> None:
        direct = g(f"{key}.direct.{p}")
        row = [g(f"{key}.{name}.{p}") - direct for name in ("before", "after")]
        note = change(fig, f"{key}.{{}}.{p}", f"{key}.direct.{p}", False)
        print(f"{label:46} {direct:9.2f} {row[0]:+9.2f} {row[1]:+9.2f}   {note}")

    for kind, label in (("turn", "route turn"), ("stream", "streamed turn, first byte"),
                        ("panel", "3-seat panel")):
        what = "ttfb" if kind == "stream" else "total"
        for p in ("p50", "p95"):
            added(f"{label}, {p}, added ms", f"{kind}.{what}", p)
        print(f"{label + ', server CPU ms/request':46} {'':9} {g(f'{kind}.cpu.before'):9.3f}"
              f" {g(f'{kind}.cpu.after'):9.3f}   {change(fig, kind + '.cpu.{}', None, False)}")
    better = {"rps": True, "p50": False, "p95": False, "cpu_ms": False, "cores": None}
    for kind, label in (("turn", "route turns"), ("panel", "3-seat panels")):
        print()
        for what, unit, fmt in (("rps", "rps", ".0f"), ("p50", "p50 ms", ".2f"), ("p95", "p95 ms", ".2f"),
                                ("errors", "errors", ".0f"), ("cpu_ms", "server CPU ms/request", ".3f"),
                                ("cores", "server CPU busy, cores", ".2f")):
            key = f"c.{kind}.{what}"
            if what == "errors":
                total = [int(sum(fig.values[f"{key}.{n}"])) for n in ("direct", "before", "after")]
                print(f"{label + f', c={c}, errors':46} {total[0]:9d} {total[1]:9d} {total[2]:9d}")
                continue
            direct = "" if what in ("cpu_ms", "cores") else format(g(f"{key}.direct"), fmt)
            print(f"{label + f', c={c}, ' + unit:46} {direct:>9} {g(f'{key}.before'):9{fmt}}"
                  f" {g(f'{key}.after'):9{fmt}}   {change(fig, key + '.{}', None, better[what])}")
    print()
    for name, values in extra.items():
        print(f"{name:46} {'':9} {values['before']:9.2f} {values['after']:9.2f}   (one sample each)")


def threads(pid: int) -> float:
    return float(len(list(Path(f"/proc/{pid}/task").iterdir())))


# ---- the run -----------------------------------------------------------------------------------

def stop_on_sigterm() -> None:
    """SIGTERM unwinds like Ctrl-C, so every ``finally`` below stops what it started."""
    def handler(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, handler)


class Upstream(Server):
    """The fake upstream as a ``Server`` (its port and pid), for the interleaving helpers."""


def run(args: argparse.Namespace, versions: list[Version], tmp: Path) -> None:
    up_port = free_port()
    upstream_url = f"http://127.0.0.1:{up_port}"
    proc = start_upstream(up_port)
    direct = Upstream("direct", tmp, up_port, tmp / "upstream.log", proc)
    servers: list[Server] = []
    try:
        cold: dict[str, float] = {}
        for v in versions:
            server = Server(v.label, tmp / v.label / "data", free_port(), tmp / f"{v.label}.log",
                            python=str(v.python), cwd=tmp)
            seed(v, server.home, upstream_url, server.log)
            servers.append(server)
            cold[v.label] = server.start()
            check_seats(server)
        if args.history:
            began = time.perf_counter()
            for s in servers:
                asyncio.run(load(s.port, lambda i: body(TURN, first=f"history {i}"), args.history, args.concurrency))
                s.served += args.history + args.concurrency
            print(f"history: {args.history:,} route turns served by each in {time.perf_counter() - began:.0f} s",
                  flush=True)
        fig = Figures()
        for rep in range(args.reps):
            asyncio.run(sequential(fig, direct, servers, args.requests, rep))
            asyncio.run(concurrent(fig, direct, servers, args.load, args.concurrency, args.slices, rep))
            cpu = ", ".join(f"{s.name} {fig.values[f'c.turn.cpu_ms.{s.name}'][-1]:.2f} ms" for s in servers)
            print(f"repetition {rep + 1} of {args.reps} done; load average {loadavg()}; c={args.concurrency} CPU"
                  f" per route turn: {cpu}; requests served by each: {servers[0].served:,}", flush=True)
        extra = {"cold start to first answer (s)": cold,
                 "RSS at the end (MiB)": {s.name: rss_mib(s.pid) for s in servers},
                 "threads at the end": {s.name: threads(s.pid) for s in servers}}
        report(fig, versions, extra, args.concurrency)
    except BaseException:
        for s in servers:
            if s.proc is not None and s.proc.poll() is not None:
                print(f"{s.name} exited with {s.proc.returncode}; its log: {s.log}", file=sys.stderr)
        raise
    finally:
        for s in servers:
            s.stop()
        direct.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="1524273", help="a git ref, or . for the working tree")
    parser.add_argument("--after", default="HEAD", help="a git ref, or . for the working tree")
    parser.add_argument("--requests", type=int, default=300, help="sequential requests per figure per repetition")
    parser.add_argument("--load", type=int, default=1000, help="route turns per c=20 figure per repetition"
                        " (panels: half)")
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--slices", type=int, default=4, help="c=20 load cut into this many interleaved slices")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="1 repetition, 100 sequential, 400 at c=20, 2 slices")
    parser.add_argument("--history", type=int, default=0, metavar="N", help="first serve N route turns on each"
                        " server (its store then holds N turns of history, as a server in use does)")
    parser.add_argument("--keep", action="store_true", help="keep the run's data folders and logs")
    parser.add_argument("--prune", action="store_true", help=f"remove every other cached version from {CACHE}")
    args = parser.parse_args()
    if args.quick:
        args.requests, args.load, args.reps, args.slices = 100, 400, 1, 2
    if min(args.reps, args.requests, args.slices, args.concurrency) < 1 or args.load < 2 * args.concurrency:
        parser.error("--reps, --requests, --slices and --concurrency are at least 1, --load at least 2x --concurrency")
    stop_on_sigterm()
    versions = [resolve("before", args.before), resolve("after", args.after)]
    for v in versions:
        build(v)
    if args.prune:
        prune(versions)
    print(f"dependencies, after vs before: {dependency_changes(*versions)}")
    print(f"load average at start: {loadavg()} ({os.cpu_count()} cores)", flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="bench-versions-"))
    try:
        run(args, versions, tmp)
    finally:
        if args.keep:
            print(f"data folders and logs kept in {tmp}")
        else:
            subprocess.run(["rm", "-rf", str(tmp)], check=False)
    print(f"\nload average at end: {loadavg()}")


if __name__ == "__main__":
    main()
