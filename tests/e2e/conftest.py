from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, sync_playwright

from tests.e2e.browser_kit import launch


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's Chromium for one test module (Playwright's sync API runs its own loop, so it is
    started and stopped around the module, never across anyio tests)."""
    with sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()
