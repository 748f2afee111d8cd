"""A panel that outlasts the keep-alive several times over keeps its MCP callers informed: progress
every keep-alive, over HTTP and through the stdio launcher at once, so clients with idle limits
(Claude Code: 60 s to the first byte, 5 min idle) never cut it off.

Time is scaled down tenfold: a 1 s keep-alive stands for the default 10 s. The one seat (the fake
upstream) answers only once each caller has been sent three keep-alives while it waited, so the
panel outlasts three keep-alives however fast the machine is; the default itself is checked
against the clients' limits.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from benchwarmers_mcp.settings import Settings
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.mcp import Seen, stdio, summary_of
from tests.kits.seed import seed
from tests.kits.waits import ANSWER

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

KEEPALIVE = 1.0  # seconds between progress messages (the default is 10)
TICKS = 3  # keep-alives each caller is sent before the seat answers
CLAUDE_CODE_FIRST_BYTE = 60.0
WAITING = "0 of 1 seats answered · "


@pytest.fixture
def settings(home: Path) -> Settings:
    return Settings.from_env({}, home=home, config_dir=home.parent / "config", keepalive=KEEPALIVE)


@pytest.fixture
def released() -> threading.Event:
    """Set when the seat may answer."""
    return threading.Event()


@pytest.fixture
def base(home: Path, fake: FakeUpstream, released: threading.Event, request: pytest.FixtureRequest) -> Iterator[str]:
    def owl(body: dict[str, object]) -> dict[str, object]:
        released.wait(ANSWER)  # the fake's own server thread waits, as a slow model would
        return {"role": "assistant", "content": "answer from owl, at last"}

    fake.responders["owl"] = owl
    seed(home, base_url=request.getfixturevalue("upstream"), served={"owl": "owl"}, collections={"slow": ["owl"]})
    yield request.getfixturevalue("gateway")
    released.set()  # a failed test leaves no request waiting in the fake


def test_the_default_keepalive_is_well_inside_the_clients_idle_limits(home: Path) -> None:
    default = Settings.from_env({}, home=home, config_dir=home.parent / "config").keepalive
    assert default == 10 * KEEPALIVE and default * 1.2 < CLAUDE_CODE_FIRST_BYTE


def ticks(seen: Seen) -> list[str]:
    return [m for m in seen.messages if m.startswith(WAITING)]


class Waited(Seen):
    """What a caller was told; ``waited`` is set once it was sent ``TICKS`` keep-alives."""

    def __init__(self) -> None:
        super().__init__()
        self.waited = anyio.Event()

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        await super().__call__(progress, total, message)
        if len(ticks(self)) >= TICKS:
            self.waited.set()


async def test_a_long_panel_keeps_sending_progress(base: str, released: threading.Event) -> None:
    over_http, over_stdio = Waited(), Waited()
    results = {}

    async def ask_over_http() -> None:
        async with httpx2.AsyncClient(timeout=ANSWER) as http, \
                Client(streamable_http_client(base + "/mcp", http_client=http)) as client:
            results["http"] = await client.call_tool("ask", {"collection": "slow", "prompt": "Take your time."},
                                                     progress_callback=over_http)

    async def ask_over_stdio() -> None:
        async with Client(stdio(base)) as client:
            results["stdio"] = await client.call_tool("ask", {"collection": "slow", "prompt": "Slowly, too."},
                                                      progress_callback=over_stdio)

    async def release_the_seat() -> None:
        with anyio.fail_after(ANSWER):  # no keep-alives: the seat never answers, and the test fails here
            await over_http.waited.wait()
            await over_stdio.waited.wait()
        released.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(ask_over_http)
        tg.start_soon(ask_over_stdio)
        tg.start_soon(release_the_seat)

    for name, seen in (("http", over_http), ("stdio", over_stdio)):
        result = results[name]
        assert not result.is_error, result.content[0].text
        assert [s["alias"] for s in summary_of(result)["seats"]] == ["owl"]
        assert len(ticks(seen)) >= TICKS, (name, seen.events)  # sent while the seat was still waiting
        assert seen.values == sorted(set(seen.values))
        assert seen.messages[-1] == "1 of 1 seats answered"
