"""Instructions per request: the server under callgrind, a figure this machine's speed leaves be.

    python benchmarks/instructions.py [--requests 200] [--kinds turn,stream,panel,long,tokens]
                                      [--before REF] [--after REF]

Wall and CPU time on this shared 2-core VM move 2x within an hour for the same build (see
README.md), so a change worth 5% cannot be told from noise by ``hotpath.py`` alone. Valgrind's
callgrind counts the instructions the server's process executes, which is the same from run to run
for the same code, inputs and interpreter (to well under 1%: an event loop that finds data in one
read or in two does a little more or less), whatever else the machine is doing.

The fake upstream (``fastfake.py``) and the client run outside valgrind, as real processes on
127.0.0.1; only ``benchwarmers serve`` runs under it, with collection off while it starts and warms
up (``--collect-atstart=no``) and switched on (``callgrind_control -i on``) for exactly the measured
requests of one kind at a time. Each kind's figure is the instructions (Ir) between its on and
off, divided by its requests:

    turn     a route turn (OpenAI chat, whole)          long    a route turn of a 201-message conversation
    stream   a streamed route turn                      tokens  a route turn whose answer is 300 tokens
    panel    a 3-seat panel

Without ``--before``, the working tree is measured with this interpreter (``--ledger-rows N``: twice,
with an empty usage ledger and with N rows in it). With ``--before`` and
``--after`` (git refs, ``.`` for the working tree), each version is built as ``versions.py`` builds
it (its own venv, cached) and both are measured in turn, with the change between them printed.
A run takes about a minute per version (valgrind runs the server 50-100x slower).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from fastfake import LONG_ASKED, Client  # noqa: E402
from hotpath import LONG_CONVERSATION, Server, body, free_port, start_upstream  # noqa: E402

KINDS = {
    "turn": ("a route turn", body("bench/trio:route")),
    "stream": ("a streamed route turn", body("bench/trio:route", stream=True)),
    "panel": ("a 3-seat panel", body("bench/trio")),
    "long": (f"a route turn, {LONG_CONVERSATION + 1}-message conversation",
             body("bench/trio:route", earlier=LONG_CONVERSATION)),
    "tokens": ("a route turn, 300-token answer", body("bench/trio:route", first=f"Give {LONG_ASKED.decode()}.")),
}
WARM = 30  # requests of each kind before any is measured (first reads, caches, the JIT-less warm-up)


def _ir(out_file: Path) -> int:
    """The instructions (Ir) in a callgrind output file: the sum of its self-cost lines (a
    ``calls=`` line's next line is the call's inclusive cost, counted where it was spent; the
    file's ``summary:`` reads 0 when instrumentation was switched on by ``callgrind_control``)."""
    total, inclusive = 0, False
    for line in out_file.read_text(errors="replace").splitlines():
        if inclusive:
            inclusive = False
        elif line.startswith("calls="):
            inclusive = True
        elif line[:1].isdigit() or line[:1] in "+-*":
            fields = line.split()
            if len(fields) >= 2:
                total += int(fields[1])
    return total


def _control(pid: int, *args: str) -> None:
    subprocess.run(["callgrind_control", *args, str(pid)], check=True, capture_output=True)


async def _send(port: int, payload: bytes, n: int, concurrency: int = 1) -> None:
    """``n`` requests, ``concurrency`` at a time (each worker on a connection of its own)."""
    async def worker(count: int) -> None:
        client = Client("127.0.0.1", port)
        try:
            for _ in range(count):
                r = await client.request("POST", "/v1/chat/completions", payload, timeout=600)
                if r.status != 200:
                    raise RuntimeError(f"the server answered {r.status}: {r.body[:300]!r}")
        finally:
            await client.close()

    share, extra = divmod(n, concurrency)
    await asyncio.gather(*(worker(share + (i < extra)) for i in range(concurrency)))


def measure(label: str, python: str, home: Path, kinds: list[str], requests: int, tmp: Path,
            keep: Path | None = None, concurrency: int = 1) -> dict[str, float]:
    """Instructions per request of each kind, on a server run by ``python`` over the data folder
    ``home`` (``hotpath.Server``, under valgrind: instrumentation off until it is switched on)."""
    out_dir = tmp / f"callgrind-{label.replace(' ', '-')}"
    out_dir.mkdir()
    server = Server(label, home, free_port(), tmp / f"{label.replace(' ', '-')}.log", python=python, cwd=tmp,
                    wrapper=("valgrind", "--tool=callgrind", "--instr-atstart=no", "--dump-instr=no",
                             f"--callgrind-out-file={out_dir}/out.%p"),
                    patience=300.0)  # under valgrind a start takes tens of seconds
    figures: dict[str, float] = {}
    try:
        server.start()
        for kind in kinds:
            payload = KINDS[kind][1]
            asyncio.run(_send(server.port, payload, WARM, concurrency))
            time.sleep(0.5)  # writes after a reply, and anything scheduled, before collection starts
            _control(server.pid, "--zero")
            _control(server.pid, "-i", "on")
            asyncio.run(_send(server.port, payload, requests, concurrency))
            time.sleep(0.5)  # the last request's writes after its reply are its own
            _control(server.pid, "-i", "off")
            for old in out_dir.iterdir():
                old.unlink()
            _control(server.pid, "--dump")
            dumps = sorted(out_dir.iterdir())
            figures[kind] = sum(_ir(f) for f in dumps) / requests
            if keep is not None:
                keep.mkdir(parents=True, exist_ok=True)
                for i, f in enumerate(dumps):
                    shutil.copy(f, keep / f"callgrind.{label.replace(' ', '-')}.{kind}.{i}")
            print(f"  {label}: {KINDS[kind][0]}: {figures[kind] / 1e6:.3f} M instructions", flush=True)
    finally:
        server.stop()
    return figures


def _seed_here(home: Path, upstream: str, ledger_rows: int = 0) -> None:
    from hotpath import prepare

    prepare(home, upstream, ledger_rows)


def arguments() -> tuple[argparse.Namespace, list[str]]:
    """The command line, checked, and the kinds of request asked for."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200, help="measured requests of each kind")
    parser.add_argument("--kinds", default=",".join(KINDS), help=f"comma-separated, of: {', '.join(KINDS)}")
    parser.add_argument("--before", help="a git ref (or . for the working tree) to compare with --after")
    parser.add_argument("--after", default=".", help="with --before: the other version (default: the working tree)")
    parser.add_argument("--concurrency", type=int, default=1, help="requests in flight at once (each"
                        " figure is still per request: what batching under load saves or costs shows)")
    parser.add_argument("--ledger-rows", type=int, default=0, metavar="N", help="this tree twice: with an empty"
                        " usage ledger and with N rows in it (issue 13: a request's cost with a big ledger)")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="keep each kind's callgrind file in DIR"
                        " (for callgrind_annotate: where the instructions went, by C function and library)")
    args = parser.parse_args()
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in KINDS]
    if unknown or not kinds:
        parser.error(f"--kinds: unknown {', '.join(unknown) or '(none given)'}; known: {', '.join(KINDS)}")
    if args.ledger_rows and args.before is not None:
        parser.error("--ledger-rows compares this tree with itself; it does not take --before")
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    return args, kinds


def main() -> None:
    args, kinds = arguments()
    tmp = Path(tempfile.mkdtemp(prefix="bench-instructions-"))
    up_port = free_port()
    upstream_url = f"http://127.0.0.1:{up_port}"
    upstream = start_upstream(up_port)
    results: dict[str, dict[str, float]] = {}
    try:
        if args.before is None and args.ledger_rows:
            for label, rows in (("empty ledger", 0), (f"ledger at {args.ledger_rows:,} rows", args.ledger_rows)):
                home = tmp / label.replace(" ", "-").replace(",", "")
                _seed_here(home, upstream_url, rows)
                results[label] = measure(label, sys.executable, home, kinds, args.requests, tmp, args.keep,
                                         args.concurrency)
        elif args.before is None:
            home = tmp / "data"
            _seed_here(home, upstream_url)
            results["this tree"] = measure("this tree", sys.executable, home, kinds, args.requests, tmp, args.keep,
                                           args.concurrency)
        else:
            import versions

            for label, ref in (("before", args.before), ("after", args.after)):
                v = versions.resolve(label, ref)
                versions.build(v)
                home = tmp / label / "data"
                versions.seed(v, home, upstream_url, tmp / f"{label}.seed.log")
                results[f"{label} ({v.describe[:40]})"] = measure(label, str(v.python), home, kinds, args.requests,
                                                                  tmp, args.keep, args.concurrency)
    finally:
        upstream.terminate()
        upstream.wait()
        shutil.rmtree(tmp, ignore_errors=True)

    columns = list(results)
    print(f"\n{'M instructions per request':44}" + "".join(f"{c[:26]:>28}" for c in columns)
          + (f"{'change':>10}" if len(columns) == 2 else ""))
    for kind in kinds:
        values = [results[c][kind] for c in columns]
        line = f"{KINDS[kind][0]:44}" + "".join(f"{v / 1e6:28.3f}" for v in values)
        if len(values) == 2:
            line += f"{(values[1] - values[0]) / values[0]:+10.1%}"
        print(line)


if __name__ == "__main__":
    main()
