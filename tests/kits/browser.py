"""Real Chromium for the dashboard tests: Debian's ``/usr/bin/chromium`` driven by Playwright for
Python (never ``playwright install``), with everything a page does written down: console
errors, uncaught errors, every request's URL, and the bytes of each response. Every wait (an
action, a navigation, an ``expect``) is ``waits.PAGE`` unless a test says otherwise: ``launch``
sets it, once, for every context and page the dashboard tests open."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from playwright.sync_api import Browser, BrowserContext, ConsoleMessage, Page, Request, Response, expect

from tests.kits.waits import PAGE

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# CI keeps these: .ci/run runs the suite in its clone, and artifacts/screenshots/ there holds a
# PNG of each page (artifacts/ is in .gitignore)
SCREENSHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"


def chromium() -> str:
    if not Path(CHROMIUM).exists():
        raise RuntimeError("Debian's chromium is missing: apt-get install chromium (.ci/run does)")
    return CHROMIUM


def launch(playwright) -> Browser:
    """Chromium whose contexts and pages, and ``expect``, wait ``PAGE`` ms (Playwright's own
    defaults, 30 s and 5 s, are outlasted by a page on a loaded machine)."""
    expect.set_options(timeout=PAGE)
    browser = playwright.chromium.launch(executable_path=chromium(), args=ARGS)
    new_context, new_page = browser.new_context, browser.new_page

    def patient_context(**options) -> BrowserContext:
        context = new_context(**options)
        context.set_default_timeout(PAGE)
        return context

    def patient_page(**options) -> Page:
        page = new_page(**options)
        page.set_default_timeout(PAGE)
        return page

    browser.new_context, browser.new_page = patient_context, patient_page  # type: ignore[method-assign]
    return browser


@dataclass
class Watch:
    """What one page did: console errors, page errors, requests, and bytes received."""

    page: Page
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    received: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))
        self.page.on("request", self._request)
        self.page.on("requestfinished", self._finished)

    def _console(self, message: ConsoleMessage) -> None:
        if message.type in ("error", "warning") and "DevTools" not in message.text:
            self.errors.append(f"console {message.type}: {message.text}")

    def _request(self, request: Request) -> None:
        self.requests.append(request.url)

    def _finished(self, request: Request) -> None:
        try:
            sizes = request.sizes()
        except Exception:  # the page closed under it
            return
        self.received[request.url] = sizes["responseBodySize"] + sizes["responseHeadersSize"]

    def hosts(self) -> set[str]:
        return {urlsplit(u).netloc for u in self.requests if not u.startswith(("data:", "blob:"))}

    def weigh(self, response: Response | None) -> int:
        """Bytes of the document just loaded and everything it pulled in since ``reset``."""
        assert response is not None
        self.page.wait_for_load_state("load")
        return sum(self.received.values())

    def reset(self) -> None:
        self.requests.clear()
        self.received.clear()


def shot(page: Page, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{re.sub(r'[^a-z0-9-]+', '-', name.lower())}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
