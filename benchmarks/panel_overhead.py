"""What a panel costs on top of the upstream: a 3-seat panel against a zero-latency fake
OpenAI upstream on loopback, each in its own process.

    python benchmarks/panel_overhead.py [--requests 300] [--concurrency 20] [--key] [--quick]

Prints p50/p95 of one direct upstream call, of a 3-seat panel, and the difference (the
gateway's added latency, sequential), then requests per second at the given concurrency and
the error count. ``--key`` gives the endpoint a provider key (the gateway then masks it in
everything the upstream sends back, as with a real provider). Nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import anyio
import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.kits.seed import seed  # noqa: E402
from tests.kits.servers import free_port, spawn_server, wait_healthy  # noqa: E402

BODY = {"model": "bench/bench3", "messages": [{"role": "user", "content": "Say something short."}]}


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


async def timed(client: httpx.AsyncClient, url: str, body: dict) -> float:
    start = time.perf_counter()
    r = await client.post(url, json=body)
    r.raise_for_status()
    return (time.perf_counter() - start) * 1000


async def measure(upstream: str, gateway: str, n: int, concurrency: int) -> None:
    direct_body = {"model": "m1", "messages": BODY["messages"]}
    async with httpx.AsyncClient(timeout=60) as client:
        for _ in range(20):  # warm both
            await timed(client, upstream + "/v1/chat/completions", direct_body)
            await timed(client, gateway + "/v1/chat/completions", BODY)
        direct = [await timed(client, upstream + "/v1/chat/completions", direct_body) for _ in range(n)]
        panel = [await timed(client, gateway + "/v1/chat/completions", BODY) for _ in range(n)]
        overhead = sorted(p - d for p, d in zip(sorted(panel), sorted(direct), strict=True))
        print(f"direct upstream call  p50 {statistics.median(direct):7.2f} ms   p95 {pct(direct, 95):7.2f} ms")
        print(f"3-seat panel          p50 {statistics.median(panel):7.2f} ms   p95 {pct(panel, 95):7.2f} ms")
        print(f"added by the gateway  p50 {statistics.median(overhead):7.2f} ms   p95 {pct(overhead, 95):7.2f} ms")

        errors = 0
        done = 0

        async def worker(count: int) -> None:
            nonlocal errors, done
            for _ in range(count):
                try:
                    await timed(client, gateway + "/v1/chat/completions", BODY)
                    done += 1
                except httpx.HTTPError as e:
                    errors += 1
                    detail = e.response.text[:300] if isinstance(e, httpx.HTTPStatusError) else repr(e)
                    print(f"error: {detail}", file=sys.stderr)

        start = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for _ in range(concurrency):
                tg.start_soon(worker, n // concurrency)
        elapsed = time.perf_counter() - start
        print(f"concurrency {concurrency}: {done / elapsed:7.1f} panels/s ({done * 3 / elapsed:.0f} seat calls/s), "
              f"{errors} errors in {done + errors} requests")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--key", action="store_true", help="give the endpoint a provider key")
    parser.add_argument("--quick", action="store_true", help="20 requests at concurrency 4: seconds, for CI"
                        " (tests/e2e/test_benchmarks_quick.py)")
    args = parser.parse_args()
    if args.quick:
        args.requests, args.concurrency = 20, 4
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "data"
        port = free_port()
        upstream = f"http://127.0.0.1:{port}"
        proc = subprocess.Popen([sys.executable, "-m", "uvicorn", "--factory", "tests.fakes.openai_upstream:create_app",
                                 "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning", "--no-access-log"],
                                cwd=ROOT)
        try:
            deadline = time.monotonic() + 20
            while True:
                try:
                    httpx.get(upstream + "/v1/models", timeout=1)
                    break
                except httpx.HTTPError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
            seed(home, base_url=upstream + "/v1", served=["m1", "m2", "m3"], collections={"bench3": ["m1", "m2", "m3"]})
            import asyncio  # the settings row: no explorers, exactly three seats

            from benchwarmers_mcp.store import Database, endpoints
            from benchwarmers_mcp.store import collections as cs

            async def no_explorers() -> None:
                async with Database(home / "benchwarmers.db") as db:
                    await cs.save_gateway_settings(db, cs.GatewaySettings(max_calls=3, max_explorers=0))
                    if args.key:
                        await endpoints.add(db, replace(await endpoints.get(db, "fake"), key_name="fake"))

            asyncio.run(no_explorers())
            key = {"BENCHWARMERS_KEY_FAKE": "sk-bench-0123456789abcdef0123456789abcdef"} if args.key else {}
            with spawn_server(home, log=Path(tempfile.gettempdir()) / "bench-gateway.log", **key) as gateway:
                wait_healthy(gateway)
                anyio.run(measure, upstream, gateway, args.requests, args.concurrency)
        finally:
            proc.terminate()
            proc.wait()


if __name__ == "__main__":
    main()
