"""CPU per outbound call to the zero-latency fake upstream, by HTTP client, in one run (issue 13).

One streamed chat completion (SSE, chunked) and one whole one through: httpx's default transport
(httpcore + h11), httpx over ``upstream.transport.LeanTransport`` (what the shared client uses),
and ``fastfake.Client`` (raw asyncio streams: the floor). The fake runs in the same process, so the
figure is the client's CPU plus the fake's (the same for every row).

    python benchmarks/outbound.py [N] [--quick]

``--quick``: N=100 after 20 warm-up calls, seconds (CI: tests/e2e/test_benchmarks_quick.py).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
import fastfake  # noqa: E402

from benchwarmers_mcp.upstream.transport import LeanTransport  # noqa: E402

QUICK = "--quick" in sys.argv[1:]
_counts = [a for a in sys.argv[1:] if a != "--quick"]
N = 100 if QUICK else int(_counts[0]) if _counts else 3000
WARM = 20 if QUICK else 200
STREAMED = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
WHOLE = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
LIMITS = httpx.Limits(max_connections=200, max_keepalive_connections=50)


def httpx_calls(client: httpx.AsyncClient, url: str) -> dict[str, Callable[[], Awaitable[None]]]:
    async def streamed() -> None:
        async with client.stream("POST", url, json=STREAMED, headers={"Authorization": "Bearer x"}) as r:
            async for _ in r.aiter_lines():
                pass

    async def whole() -> None:
        r = await client.post(url, json=WHOLE, headers={"Authorization": "Bearer x"})
        r.json()

    return {"streamed": streamed, "whole": whole}


def raw_calls(port: int) -> dict[str, Callable[[], Awaitable[None]]]:
    client = fastfake.Client("127.0.0.1", port)
    streamed, whole = json.dumps(STREAMED).encode(), json.dumps(WHOLE).encode()

    async def call_streamed() -> None:
        await client.request("POST", "/v1/chat/completions", streamed)

    async def call_whole() -> None:
        await client.request("POST", "/v1/chat/completions", whole)

    return {"streamed": call_streamed, "whole": call_whole}


async def cpu_per_call(call: Callable[[], Awaitable[None]]) -> float:
    for _ in range(WARM):
        await call()
    started = time.process_time()
    for _ in range(N):
        await call()
    return (time.process_time() - started) / N * 1e3


async def main() -> None:
    server = await asyncio.get_running_loop().create_server(fastfake.FakeProtocol, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    timeout = httpx.Timeout(60, connect=5)
    default = httpx.AsyncClient(follow_redirects=False, timeout=timeout, limits=LIMITS)
    lean = httpx.AsyncClient(follow_redirects=False, timeout=timeout, limits=LIMITS,
                             transport=LeanTransport(max_connections=200, max_keepalive=50))
    rows = [("httpx default (httpcore)", httpx_calls(default, url)),
            ("httpx over LeanTransport", httpx_calls(lean, url)), ("raw asyncio client", raw_calls(port))]
    print(f"CPU per call, ms (N={N}, after {WARM} warm-up calls; fake upstream in-process)")
    print(f"{'client':28s} {'streamed':>9s} {'whole':>9s}")
    for name, calls in rows:
        figures = [await cpu_per_call(calls[kind]) for kind in ("streamed", "whole")]
        print(f"{name:28s} {figures[0]:9.3f} {figures[1]:9.3f}")
    await default.aclose()
    await lean.aclose()
    server.close()


if __name__ == "__main__":
    asyncio.run(main())
