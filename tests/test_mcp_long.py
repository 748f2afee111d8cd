"""A panel longer than 30 s keeps its MCP callers informed: progress at least every 10 s (the default
keep-alive), over HTTP and through the stdio launcher at once, so clients with idle limits (Claude
Code: 60 s to the first byte, 5 min idle) never cut it off. The one slow test of the suite (~35 s)."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.kits.seed import seed
from tests.test_mcp_http import Seen, summary_of
from tests.test_mcp_stdio import stdio

pytestmark = pytest.mark.anyio

IDLE_LIMIT = 12.0  # seconds without a byte on the HTTP reply before the client gives up


@pytest.fixture
def base(home: Path, request: pytest.FixtureRequest) -> str:
    seed(home, base_url=None, api="simulated", endpoint="sim", served={"owl": "owl?latency=32"},
         collections={"slow": ["owl"]})
    return request.getfixturevalue("gateway")


async def test_a_32_second_panel_keeps_sending_progress(base: str) -> None:
    over_http, over_stdio = Seen(), Seen()
    results = {}

    async def ask_over_http() -> None:
        timeout = httpx2.Timeout(IDLE_LIMIT, read=IDLE_LIMIT)
        async with httpx2.AsyncClient(timeout=timeout) as http, \
                Client(streamable_http_client(base + "/mcp", http_client=http)) as client:
            results["http"] = await client.call_tool("ask", {"collection": "slow", "prompt": "Take your time."},
                                                     progress_callback=over_http)

    async def ask_over_stdio() -> None:
        async with Client(stdio(base)) as client:
            results["stdio"] = await client.call_tool("ask", {"collection": "slow", "prompt": "Slowly, too."},
                                                      progress_callback=over_stdio)

    async with anyio.create_task_group() as tg:
        tg.start_soon(ask_over_http)
        tg.start_soon(ask_over_stdio)

    for name, seen in (("http", over_http), ("stdio", over_stdio)):
        result = results[name]
        assert not result.is_error, result.content[0].text
        assert [s["alias"] for s in summary_of(result)["seats"]] == ["owl"]
        ticks = [m for m in seen.messages if m.startswith("0 of 1 seats answered · ")]
        assert len(ticks) >= 3, (name, seen.events)  # 10 s, 20 s and 30 s into a 32 s panel
        assert seen.values == sorted(set(seen.values))
        assert seen.messages[-1] == "1 of 1 seats answered"
