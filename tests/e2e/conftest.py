"""End-to-end tests: real sockets, server processes, console scripts, Claude Code, npm, Chromium.
Here the fake upstream and the gateway are real servers on free loopback ports (in a thread), so a
subprocess or a browser can reach them."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest
from playwright.sync_api import Browser, sync_playwright

from benchwarmers_mcp.app import create_app
from benchwarmers_mcp.settings import Settings
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.browser import launch
from tests.kits.servers import free_port, serve_in_thread


@pytest.fixture
def upstream(fake: FakeUpstream) -> Iterator[str]:
    """The fake OpenAI-compatible upstream on a free port; yields its /v1 base URL."""
    with serve_in_thread(fake.app()) as base:
        yield base + "/v1"


@pytest.fixture
def gateway(settings: Settings) -> Iterator[str]:
    """A real Benchwarmers server (in a thread) on a free port, on the test's data folder."""
    port = free_port()
    with serve_in_thread(create_app(replace(settings, port=port)), port) as base:
        yield base


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's Chromium for one test module (Playwright's sync API runs its own loop, so it is
    started and stopped around the module, never across anyio tests)."""
    with sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()
