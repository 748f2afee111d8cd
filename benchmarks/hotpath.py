"""The hot path, side by side with a direct upstream call, in one run (issue 13).

    python benchmarks/hotpath.py [--requests 400] [--load 2000] [--concurrency 20] [--reps 3]
                                 [--ledger-rows 1000000] [--compare-stack] [--quick] [--no-total]

Starts a zero-latency fake OpenAI upstream (``fastfake.py``: raw asyncio, no framework) and
Benchwarmers (``python -m benchwarmers_mcp serve``) as real processes on 127.0.0.1, then prints:

- sequential, direct vs route turn (p50/p95/p99 and the added ms), streamed route turn (time to
  first and last byte), a 3-seat panel against one direct call, a route turn of a 201-message
  conversation and one whose answer is ``LONG_TOKENS`` tokens (the fake streams a token an event
  to the gateway, which asks its members streamed, and answers the direct call whole); each
  gateway request is interleaved with a direct one, so both see the same machine;
- at concurrency 20: direct, route turns and panels (rps, p50, p95, errors), the gateway's CPU
  per request (user + system time of its process, all threads) and its ratio to direct;
- cold start (process start to the first route-turn answer, modules compiled as an installed
  package has them; the first start, which compiles them, is printed apart), RSS idle and after
  10,000 requests;
- the sequential and c=20 route-turn figures against a second server whose usage ledger holds
  ``--ledger-rows`` rows (interleaved with the first server and direct calls, in a block of their
  own: the first server's figures above never wait on the second's);
- once, after the repetitions: a panel of the three members and an explorer seat on a bench of
  ``WIDE_BENCH`` models, as a user's bench is (the figures above have three models and no
  explorer: what grows with the bench, the explorer's pool and its ratings, shows only here).

Every figure is the median over ``--reps`` repetitions, each paired with the direct call in the
same repetition. The load average is printed before and after: on a busy machine, trust the
CPU-per-request figures over wall time. Nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from fastfake import LONG_ASKED, LONG_TOKENS, Client, Response  # noqa: E402

from tests.kits.seed import seed  # noqa: E402
from tests.kits.servers import free_port, server_env  # noqa: E402
from tests.kits.store import store_of  # noqa: E402

MESSAGES = [{"role": "user", "content": "Say something short."}]
TICK = os.sysconf("SC_CLK_TCK")


LONG_CONVERSATION = 200  # messages in the "long" figure's turns: an agent's conversation, well along
WIDE_BENCH = 43  # models on the bench for the explorer figure: the three members and 40 more


def body(model: str, *, stream: bool = False, first: str = "Say something short.", earlier: int = 0) -> bytes:
    """A chat request; ``earlier`` messages of an ongoing conversation before the last one."""
    history = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i}: " + "words " * 30}
               for i in range(earlier)]
    out: dict[str, object] = {"model": model, "messages": [*history, {"role": "user", "content": first}]}
    if stream:
        out["stream"] = True
    return json.dumps(out).encode()


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def cpu_seconds(pid: int) -> float:
    """User + system time of a process, every thread, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


# ---- processes ---------------------------------------------------------------------------------

@dataclass
class Server:
    name: str
    home: Path
    port: int
    log: Path
    proc: subprocess.Popen[bytes] | None = None
    served: int = 0  # requests this server answered during the run
    blocked: tuple[str, ...] = ()  # modules this server may not import (uvloop, httptools)
    python: str = sys.executable  # another interpreter runs another installed version (versions.py)
    cwd: Path | None = None
    bytecode: Path | None = None  # compiled modules kept here, as an installed package has them
    wrapper: tuple[str, ...] = ()  # a command the server runs under (instructions.py: valgrind)
    patience: float = 60.0  # seconds the first answer may take

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self) -> float:
        """Start the server; seconds from process start to its first route-turn answer."""
        with open(self.log, "ab") as out:
            started = time.perf_counter()
            command = ["-m", "benchwarmers_mcp", "serve"]
            if self.blocked:  # uvicorn's "auto" then falls back to asyncio's loop and h11
                command = ["-c", f"import sys; sys.modules.update(dict.fromkeys({self.blocked!r}));"
                                 " from benchwarmers_mcp.cli.main import main; sys.exit(main(['serve']))"]
            env = server_env(self.home, self.port)
            if self.bytecode is not None:  # pip compiles a wheel's modules; an editable checkout may not
                env.pop("PYTHONDONTWRITEBYTECODE", None)
                env["PYTHONPYCACHEPREFIX"] = str(self.bytecode)
            self.proc = subprocess.Popen([*self.wrapper, self.python, *command], env=env, stdout=out,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=self.cwd)
        return asyncio.run(self._first_answer(started))

    async def _first_answer(self, started: float) -> float:
        deadline = time.monotonic() + self.patience
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}; see {self.log}")
            client = Client("127.0.0.1", self.port)
            try:
                r = await client.request("POST", "/v1/chat/completions", body("bench/trio:route"))
                if r.status == 200:
                    self.served += 1
                    return time.perf_counter() - started
                raise RuntimeError(f"{self.name} answered {r.status}: {r.body[:300]!r}")
            except OSError:
                await asyncio.sleep(0.002)
            finally:
                await client.close()
        raise RuntimeError(f"{self.name} did not answer in {self.patience:g} s")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None


def start_upstream(port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, str(HERE / "fastfake.py"), str(port)])

    async def ready() -> None:
        for _ in range(500):
            client = Client("127.0.0.1", port)
            try:
                await client.request("GET", "/v1/models")
                return
            except OSError:
                await asyncio.sleep(0.01)
            finally:
                await client.close()
        raise RuntimeError("the fake upstream did not start")

    asyncio.run(ready())
    return proc


def prepare(home: Path, upstream: str, ledger_rows: int = 0) -> None:
    seed(home, base_url=upstream + "/v1", served=["m1", "m2", "m3"], collections={"trio": ["m1", "m2", "m3"]})

    from benchwarmers_mcp.store import collections as cs
    from benchwarmers_mcp.store import ledger

    async def settle() -> None:
        async with store_of(home) as db:  # the data folder's SQLite, or the PostgreSQL it is bound to
            await cs.save_gateway_settings(db, cs.GatewaySettings(max_calls=3, max_explorers=0))  # exactly 3 seats
            if ledger_rows:
                now = time.time()
                rows = (ledger.UsageRow(alias=f"m{1 + i % 3}", connection="fake", endpoint="fake", served=f"m{1 + i % 3}",
                                        status="ok", tokens_in=12, tokens_out=14, seconds=0.01, caller="route",
                                        purpose="route", t=now - 7 * 86400 + i * (7 * 86400 / ledger_rows))
                        for i in range(ledger_rows))
                async with db.transaction() as tx:
                    await ledger.insert_many(tx, rows)

    asyncio.run(settle())


def widen(home: Path) -> None:
    """``WIDE_BENCH`` models on the bench and an explorer seat on every panel, written to the store
    of a running server (which sees the change through ``config_version``, as any process would)."""
    from benchwarmers_mcp.store import collections as cs
    from benchwarmers_mcp.store import models
    from benchwarmers_mcp.store.models import ModelRecord

    async def more() -> None:
        async with store_of(home) as db:
            for i in range(WIDE_BENCH - 3):
                await models.register(db, ModelRecord(f"x{i}", f"vendor/x{i}", "fake", ""))
            await cs.save_gateway_settings(db, cs.GatewaySettings(max_calls=4, max_explorers=1))

    asyncio.run(more())


# ---- measuring ---------------------------------------------------------------------------------

Call = Callable[[], Awaitable[Response]]


def caller(port: int, payload: bytes) -> tuple[Client, Call]:
    client = Client("127.0.0.1", port)

    async def call() -> Response:
        r = await client.request("POST", "/v1/chat/completions", payload)
        if r.status != 200:
            raise RuntimeError(f"status {r.status}: {r.body[:300]!r}")
        return r

    return client, call


async def interleaved(calls: list[Call], n: int) -> list[list[Response]]:
    """``n`` rounds of one call each, in turn: every target sees the same moment of the machine."""
    for _ in range(10):  # warm each connection and code path
        for call in calls:
            await call()
    out: list[list[Response]] = [[] for _ in calls]
    for _ in range(n):
        for i, call in enumerate(calls):
            out[i].append(await call())
    return out


@dataclass
class Load:
    rps: float
    p50: float
    p95: float
    errors: int
    cpu_ms: float | None = None  # the measured process's CPU per request
    metered: dict[str, float] = field(default_factory=dict)  # each meter's CPU ms per request
    latencies: list[float] = field(default_factory=list)  # ms of each answered request (to pool runs)
    seconds: float = 0.0  # wall time of the measured part


async def load(port: int | Sequence[int], payload_of: Callable[[int], bytes], n: int, concurrency: int,
               pid: int | None = None, meters: Mapping[str, Callable[[], float]] | None = None) -> Load:
    """``n`` requests from ``concurrency`` workers, each on one keep-alive connection (several ports:
    worker i uses port i mod len); ``meters`` are CPU-seconds readings taken around the timed part."""
    ports = [port] if isinstance(port, int) else list(port)
    latencies: list[float] = []
    errors = 0
    clients = [Client("127.0.0.1", ports[i % len(ports)]) for i in range(concurrency)]

    async def worker(i: int) -> None:
        nonlocal errors
        payload = payload_of(i)
        for _ in range(n // concurrency):
            try:
                r = await clients[i].request("POST", "/v1/chat/completions", payload)
                if r.status == 200:
                    latencies.append(r.total * 1000)
                else:
                    errors += 1
            except (TimeoutError, OSError, ValueError):
                errors += 1

    await asyncio.gather(*(clients[i].request("POST", "/v1/chat/completions", payload_of(i))
                           for i in range(concurrency)))  # open every connection first
    cpu = cpu_seconds(pid) if pid else 0.0
    before = {name: meter() for name, meter in (meters or {}).items()}
    start = time.perf_counter()
    await asyncio.gather(*(worker(i) for i in range(concurrency)))
    elapsed = time.perf_counter() - start
    done = max(1, len(latencies) + errors)
    cpu_ms = (cpu_seconds(pid) - cpu) * 1000 / done if pid else None
    metered = {name: (meter() - before[name]) * 1000 / done for name, meter in (meters or {}).items()}
    for c in clients:
        await c.close()
    return Load(len(latencies) / elapsed, statistics.median(latencies) if latencies else 0.0,
                pct(latencies, 95) if latencies else 0.0, errors, cpu_ms,
                metered=metered, latencies=latencies, seconds=elapsed)


# ---- the run -----------------------------------------------------------------------------------

@dataclass
class Figures:
    """Each figure per repetition; printed as the median."""

    values: dict[str, list[float]] = field(default_factory=dict)

    def add(self, name: str, value: float) -> None:
        self.values.setdefault(name, []).append(value)

    def get(self, name: str) -> float:
        return statistics.median(self.values[name])

    def percentiles(self, tag: str, values: list[float]) -> None:
        """``tag``'s p50, p95 and p99 of this repetition."""
        self.add(tag + ".p50", statistics.median(values))
        self.add(tag + ".p95", pct(values, 95))
        self.add(tag + ".p99", pct(values, 99))


def ms(responses: list[Response], what: str = "total") -> list[float]:
    return [getattr(r, what) * 1000 for r in responses]


async def sequential(fig: Figures, upstream: int, a: Server, b: Server | None, n: int) -> None:
    """One repetition of the sequential figures. A's own figures are taken with direct calls alone
    between its requests; B's comparison is a block of its own (direct, A, B in turn), since a
    server that waits while another serves wakes slower, which would charge B's presence to A."""
    blocks = [("", [(upstream, "m1"), (a.port, "bench/trio:route")], ["direct", "A"])]
    if b:
        blocks.append(("vsB.", [(upstream, "m1"), (a.port, "bench/trio:route"), (b.port, "bench/trio:route")],
                       ["direct", "A", "B"]))
    for prefix, targets, names in blocks:
        for stream in (False, True):
            pairs = [caller(port, body(model, stream=stream)) for port, model in targets]
            cpu = cpu_seconds(a.pid)
            results = await interleaved([c for _, c in pairs], n)
            kind = "stream" if stream else "turn"
            fig.add(f"{prefix}{kind}.cpu.A", (cpu_seconds(a.pid) - cpu) * 1000 / (n + 10))
            for client, _ in pairs:
                await client.close()
            for name, rs in zip(names, results, strict=True):
                for what in ("total", "ttfb") if stream else ("total",):
                    fig.percentiles(f"{prefix}{kind}.{what}.{name}", ms(rs, what))
            a.served += n + 10
            if b and len(targets) == 3:
                b.served += n + 10
    await against_direct(fig, "long", upstream, a, n, body("m1", earlier=LONG_CONVERSATION),
                         body("bench/trio:route", earlier=LONG_CONVERSATION))
    await against_direct(fig, "panel", upstream, a, n, body("m1"), body("bench/trio"))
    long_answer = f"Write me {LONG_ASKED.decode()}."  # the fake's LONG_TOKENS words: streamed upstream, one an event
    await against_direct(fig, "answer", upstream, a, n, body("m1", first=long_answer),
                         body("bench/trio:route", first=long_answer))
    await against_direct(fig, "answer_streamed", upstream, a, n, body("m1", stream=True, first=long_answer),
                         body("bench/trio:route", stream=True, first=long_answer))


async def against_direct(fig: Figures, kind: str, upstream: int, a: Server, n: int, direct_body: bytes,
                         gateway_body: bytes) -> None:
    """``kind``'s sequential figures on A, each call paired with a direct one: p50/p95/p99 and CPU."""
    pairs = [caller(upstream, direct_body), caller(a.port, gateway_body)]
    cpu = cpu_seconds(a.pid)
    results = await interleaved([c for _, c in pairs], n)
    fig.add(f"{kind}.cpu.A", (cpu_seconds(a.pid) - cpu) * 1000 / (n + 10))
    for client, _ in pairs:
        await client.close()
    a.served += n + 10
    for name, rs in zip(("direct", "A"), results, strict=True):
        fig.percentiles(f"{kind}.total.{name}", ms(rs))


async def concurrent(fig: Figures, upstream: int, a: Server, b: Server | None, n: int, c: int,
                     upstream_pid: int) -> None:
    """One repetition of the c=20 figures: direct, route turns, panels (and turns on B)."""
    def turn(i: int) -> bytes:
        return body("bench/trio:route", first=f"worker {i}: say something short.")

    runs: list[tuple[str, int, Callable[[int], bytes], int]] = [
        ("direct", upstream, lambda i: body("m1", first=f"worker {i}: say something short."), upstream_pid),
        ("turn.A", a.port, turn, a.pid),
        ("panel.A", a.port, lambda i: body("bench/trio", first=f"worker {i}: say something short."), a.pid),
    ]
    if b:
        runs.append(("turn.B", b.port, turn, b.pid))
    for name, port, payload_of, pid in runs:
        count = n // 2 if name.startswith("panel") else n
        result = await load(port, payload_of, count, c, pid)
        for server in (a, b):
            if server and port == server.port:
                server.served += count + c
        fig.add(f"c.{name}.rps", result.rps)
        fig.add(f"c.{name}.p50", result.p50)
        fig.add(f"c.{name}.p95", result.p95)
        fig.add(f"c.{name}.errors", result.errors)
        if result.cpu_ms is not None:
            fig.add(f"c.{name}.cpu_ms", result.cpu_ms)
    fig.add("c.turn.ratio", fig.values["c.turn.A.rps"][-1] / fig.values["c.direct.rps"][-1])
    fig.add("c.panel.ratio", fig.values["c.panel.A.rps"][-1] / fig.values["c.direct.rps"][-1])
    if b:
        fig.add("c.turnB.ratio", fig.values["c.turn.B.rps"][-1] / fig.values["c.direct.rps"][-1])


def report(fig: Figures, cold: list[float], rss: dict[str, float], has_b: bool, rows: int, b_is: str) -> None:
    g = fig.get

    def added(kind: str, what: str, server: str = "A", p: str = "p50") -> float:
        return g(f"{kind}.{what}.{server}.{p}") - g(f"{kind}.{what}.direct.{p}")

    print()
    print(f"{'figure':58} {'direct':>10} {'gateway':>10} {'added':>9}")
    for kind, label in (("turn", "route turn"), ("panel", "3-seat panel (vs one direct call)")):
        for p in ("p50", "p95", "p99"):
            print(f"{label + ', sequential ' + p + ' (ms)':58} {g(f'{kind}.total.direct.{p}'):10.2f}"
                  f" {g(f'{kind}.total.A.{p}'):10.2f} {added(kind, 'total', p=p):+9.2f}")
    for what, label in (("ttfb", "first byte"), ("total", "last byte")):
        for p in ("p50", "p95"):
            print(f"{'streamed route turn, ' + label + ' ' + p + ' (ms)':58} {g(f'stream.{what}.direct.{p}'):10.2f}"
                  f" {g(f'stream.{what}.A.{p}'):10.2f} {added('stream', what, p=p):+9.2f}")
    print(f"{f'route turn, {LONG_CONVERSATION + 1}-message conversation, sequential p50 (ms)':58}"
          f" {g('long.total.direct.p50'):10.2f} {g('long.total.A.p50'):10.2f} {added('long', 'total'):+9.2f}")
    print(f"{f'route turn, {LONG_TOKENS}-token answer, sequential p50 (ms)':58}"
          f" {g('answer.total.direct.p50'):10.2f} {g('answer.total.A.p50'):10.2f} {added('answer', 'total'):+9.2f}")
    print(f"{'  the same, streamed both ways, last byte p50 (ms)':58} {g('answer_streamed.total.direct.p50'):10.2f}"
          f" {g('answer_streamed.total.A.p50'):10.2f} {added('answer_streamed', 'total'):+9.2f}")
    print(f"{f'panel + explorer, {WIDE_BENCH}-model bench (once), p50 (ms)':58}"
          f" {g('wide.total.direct.p50'):10.2f} {g('wide.total.A.p50'):10.2f} {added('wide', 'total'):+9.2f}")
    print(f"server CPU per request, sequential (ms; wall figures above follow it): route turn"
          f" {g('turn.cpu.A'):.2f}, streamed turn {g('stream.cpu.A'):.2f}, 3-seat panel {g('panel.cpu.A'):.2f},"
          f" {LONG_CONVERSATION + 1}-message turn {g('long.cpu.A'):.2f}, {LONG_TOKENS}-token answer {g('answer.cpu.A'):.2f}"
          f" (streamed {g('answer_streamed.cpu.A'):.2f})"
          f", panel + explorer on {WIDE_BENCH} models {g('wide.cpu.A'):.2f}")
    print()
    print(f"{'concurrency':58} {'rps':>8} {'p50 ms':>8} {'p95 ms':>8} {'errors':>6} {'cpu ms/req':>10} {'x direct':>8}")
    rows_c = [("direct upstream", "direct", None), ("route turns", "turn.A", "c.turn.ratio"),
              ("3-seat panels", "panel.A", "c.panel.ratio")]
    if has_b:
        rows_c.append((f"route turns, {b_is}", "turn.B", "c.turnB.ratio"))
    for label, key, ratio in rows_c:
        cpu = fig.values.get(f"c.{key}.cpu_ms")
        print(f"{label:58} {g(f'c.{key}.rps'):8.0f} {g(f'c.{key}.p50'):8.2f} {g(f'c.{key}.p95'):8.2f}"
              f" {int(sum(fig.values[f'c.{key}.errors'])):6d} {statistics.median(cpu) if cpu else 0:10.3f}"
              f" {g(ratio) if ratio else 1.0:8.3f}")
    print()
    print(f"cold start to first answer: median {statistics.median(cold):.3f} s (runs: "
          f"{', '.join(f'{c:.3f}' for c in cold)})")
    print(f"RSS: idle {rss['idle']:.1f} MiB, after {rss['served']:,.0f} requests {rss['after']:.1f} MiB")
    if has_b:
        print()
        print(f"server B ({b_is}) vs server A (same repetitions, a block of direct, A and B in turn):")
        for label, kind, what in (("route turn p50", "turn", "total"), ("streamed first byte p50", "stream", "ttfb")):
            a_add, b_add = added(f"vsB.{kind}", what, "A"), added(f"vsB.{kind}", what, "B")
            print(f"  {label:40} added {a_add:+.2f} ms on A, {b_add:+.2f} ms on B"
                  f" (gateway time {g(f'vsB.{kind}.{what}.B.p50') / g(f'vsB.{kind}.{what}.A.p50') - 1:+.1%})")
        change = g("c.turn.B.rps") / g("c.turn.A.rps") - 1
        print(f"  {'route turns at c=20':40} {g('c.turn.A.rps'):.0f} rps on A, {g('c.turn.B.rps'):.0f} rps"
              f" on B ({change:+.1%}); CPU per turn {g('c.turn.A.cpu_ms'):.2f} ms on A,"
              f" {g('c.turn.B.cpu_ms'):.2f} ms on B")


def profile(a: Server, upstream: int, args: argparse.Namespace) -> None:
    """py-spy on server A while it serves ``--profile-kind`` requests at ``--concurrency``."""
    model = "bench/trio" if args.profile_kind == "panel" else "bench/trio:route"
    stream = args.profile_kind == "stream"
    spy = subprocess.Popen(["py-spy", "record", "-p", str(a.pid), "-o", args.profile, "--format", "raw",
                            "-r", "200", "-d", str(int(args.profile_seconds)), "--nonblocking",
                            *(["--gil"] if args.profile_gil else [])])
    time.sleep(1.0)

    async def drive() -> None:
        deadline = time.monotonic() + args.profile_seconds
        clients = [Client("127.0.0.1", a.port) for _ in range(args.concurrency)]
        done = 0

        async def worker(i: int) -> None:
            nonlocal done
            payload = body(model, stream=stream, first=f"worker {i}: say something short.")
            while time.monotonic() < deadline:
                await clients[i].request("POST", "/v1/chat/completions", payload)
                done += 1

        cpu = cpu_seconds(a.pid)
        began = time.perf_counter()
        await asyncio.gather(*(worker(i) for i in range(args.concurrency)))
        print(f"{done} requests, {done / (time.perf_counter() - began):.0f} rps,"
              f" {(cpu_seconds(a.pid) - cpu) * 1000 / done:.3f} ms CPU each")

    asyncio.run(drive())
    spy.wait()


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=400, help="sequential requests per figure per repetition")
    parser.add_argument("--load", type=int, default=2000, help="requests per c=20 figure per repetition")
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--ledger-rows", type=int, default=1_000_000, help="0 leaves out the ledger figures")
    parser.add_argument("--compare-stack", action="store_true",
                        help="server B is a fresh server without uvloop and httptools (instead of the ledger)")
    parser.add_argument("--cold-starts", type=int, default=3)
    parser.add_argument("--total", type=int, default=10_000, help="requests served before the RSS 'after' figure")
    parser.add_argument("--quick", action="store_true", help="a short run: 1 repetition, fewer requests, no ledger")
    parser.add_argument("--no-total", action="store_true", help="leave out the top-up to --total requests (RSS after)")
    parser.add_argument("--profile", metavar="PATH", help="only profile server A under load with py-spy"
                        " (collapsed stacks to PATH; --profile-kind turn|stream|panel, --concurrency)")
    parser.add_argument("--profile-kind", default="turn", choices=("turn", "stream", "panel"))
    parser.add_argument("--profile-seconds", type=float, default=20.0)
    parser.add_argument("--profile-gil", action="store_true", help="sample only the thread holding the GIL")
    args = parser.parse_args()
    if args.quick:
        args.requests, args.load, args.reps, args.ledger_rows, args.cold_starts = 150, 600, 1, 0, 1
    return args


def second_server(args: argparse.Namespace, tmp: Path, upstream_url: str) -> Server | None:
    """Server B: without uvloop and httptools (``--compare-stack``), or with the ledger pre-filled."""
    if args.compare_stack:
        b = Server("B", tmp / "b" / "data", free_port(), tmp / "b.log", blocked=("uvloop", "httptools"))
        prepare(b.home, upstream_url)
        return b
    if not args.ledger_rows:
        return None
    b = Server("B", tmp / "b" / "data", free_port(), tmp / "b.log")
    began = time.perf_counter()
    prepare(b.home, upstream_url, args.ledger_rows)
    print(f"ledger of server B pre-filled with {args.ledger_rows:,} rows in {time.perf_counter() - began:.1f} s")
    return b


def cold_starts(a: Server, n: int, tmp: Path) -> list[float]:
    """Seconds to the first answer, ``n`` times; ``a`` is left running. The first start compiles
    every module into ``bytecode`` (what pip does at install); the ones after it load them, as an
    installed server does."""
    a.bytecode = tmp / "bytecode"
    compiling = a.start()
    a.stop()
    cold = []
    for i in range(n):
        cold.append(a.start())
        if i < n - 1:
            a.stop()
    print(f"first start, compiling every module: {compiling:.3f} s")
    return cold


def main() -> None:
    args = arguments()
    print(f"load average at start: {loadavg()} ({os.cpu_count()} cores)")
    with tempfile.TemporaryDirectory(prefix="bench-hotpath-") as tmp:
        up_port = free_port()
        upstream_url = f"http://127.0.0.1:{up_port}"
        upstream = start_upstream(up_port)
        servers: list[Server] = []
        try:
            a = Server("A", Path(tmp) / "a" / "data", free_port(), Path(tmp) / "a.log")
            prepare(a.home, upstream_url)
            b = second_server(args, Path(tmp), upstream_url)
            cold = cold_starts(a, args.cold_starts, Path(tmp))
            servers.append(a)
            if b:
                b.start()
                servers.append(b)
            fig = Figures()

            async def warm_and_idle() -> float:
                _, call = caller(a.port, body("bench/trio:route"))
                for _ in range(20):
                    await call()
                a.served += 20
                await asyncio.sleep(0.5)
                return rss_mib(a.pid)

            rss = {"idle": asyncio.run(warm_and_idle())}
            if args.profile:
                profile(a, up_port, args)
                return
            for rep in range(args.reps):
                asyncio.run(sequential(fig, up_port, a, b, args.requests))
                asyncio.run(concurrent(fig, up_port, a, b, args.load, args.concurrency, upstream.pid))
                print(f"repetition {rep + 1} done; load average {loadavg()}", flush=True)
            widen(a.home)  # last: every figure above is of the three-model bench
            asyncio.run(against_direct(fig, "wide", up_port, a, args.requests, body("m1"), body("bench/trio")))
            if a.served < args.total and not args.no_total:
                asyncio.run(load(a.port, lambda i: body("bench/trio:route", first=f"top-up {i}"),
                                 args.total - a.served, args.concurrency))
                a.served = max(a.served, args.total)
            rss["after"], rss["served"] = rss_mib(a.pid), a.served
            report(fig, cold, rss, b is not None, args.ledger_rows,
                   "without uvloop/httptools" if args.compare_stack else f"ledger at {args.ledger_rows:,} rows")
        finally:
            for s in servers:
                s.stop()
            upstream.terminate()
            upstream.wait()
    print(f"\nload average at end: {loadavg()}")


if __name__ == "__main__":
    main()
