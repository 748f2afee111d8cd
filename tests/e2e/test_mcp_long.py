"""A panel that outlasts the keep-alive several times over keeps its MCP callers informed: progress at
least every keep-alive, over HTTP and through the stdio launcher at once, so clients with idle
limits (Claude Code: 60 s to the first byte, 5 min idle) never cut it off.

Time is scaled down tenfold: a 1 s keep-alive, a 3.5 s panel and a 1.2 s idle limit on the HTTP
client stand for the default 10 s keep-alive, a 35 s panel and a 12 s limit; the default itself is
checked against those limits."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from benchwarmers_mcp.settings import Settings
from tests.kits.mcp import Seen, stdio, summary_of
from tests.kits.seed import seed

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

KEEPALIVE = 1.0  # seconds between progress messages (the default is 10)
PANEL = 3.5  # seconds the one seat takes: three keep-alives and then some
IDLE_LIMIT = 1.2 * KEEPALIVE  # seconds without a byte on the HTTP reply before the client gives up
CLAUDE_CODE_FIRST_BYTE = 60.0


@pytest.fixture
def settings(home: Path) -> Settings:
    return Settings.from_env({}, home=home, config_dir=home.parent / "config", keepalive=KEEPALIVE)


@pytest.fixture
def base(home: Path, request: pytest.FixtureRequest) -> str:
    seed(home, base_url=None, api="simulated", endpoint="sim", served={"owl": f"owl?latency={PANEL}"},
         collections={"slow": ["owl"]})
    return request.getfixturevalue("gateway")


def test_the_default_keepalive_is_well_inside_the_clients_idle_limits(home: Path) -> None:
    default = Settings.from_env({}, home=home, config_dir=home.parent / "config").keepalive
    assert default == 10 * KEEPALIVE and default * 1.2 < CLAUDE_CODE_FIRST_BYTE


async def test_a_long_panel_keeps_sending_progress(base: str) -> None:
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
        assert len(ticks) >= 3, (name, seen.events)  # 1 s, 2 s and 3 s into a 3.5 s panel
        assert seen.values == sorted(set(seen.values))
        assert seen.messages[-1] == "1 of 1 seats answered"
