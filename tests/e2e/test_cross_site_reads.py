"""Issue 29.11 in Chromium, on the default loopback install (no token, no keys): a page on another
site (``localhost``) or on another port of this host (same-site) embeds the admin routes as images,
a script and a frame; the server refuses each (403) and calls no upstream, writes nothing; the
gateway's read-only ``/bench/suggestions`` answers, as it changes nothing; and a link on that page
opens the dashboard as any link would."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.responses import HTMLResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from benchwarmers_mcp.app import create_app
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import Database
from benchwarmers_mcp.store import ratings as rating_store
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.servers import free_port, serve_in_thread
from tests.kits.store import in_store
from tests.ratings.kit import bench as make_bench
from tests.ratings.kit import judge

pytestmark = pytest.mark.e2e

EMBEDDED = {"/api/candidates": "img", "/api/endpoints": "img", "/api/status": "script", "/": "iframe",
            "/bench/suggestions": "img"}
PAGE = """<!doctype html><html><body><h1>Another site</h1>
<img src="{base}/api/candidates"><img src="{base}/api/endpoints"><img src="{base}/bench/suggestions">
<script src="{base}/api/status"></script><iframe src="{base}/"></iframe>
<a id="dashboard" href="{base}/collections">the dashboard</a></body></html>"""


@dataclass
class Seen:
    """Every request the server answered: method, path, status and ``Sec-Fetch-Site``."""

    answers: list[tuple[str, str, int, str]] = field(default_factory=list)

    def wrap(self, app: ASGIApp) -> ASGIApp:
        async def recorded(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != "http":
                return await app(scope, receive, send)
            site = Headers(scope=scope).get("sec-fetch-site", "")

            async def sending(message: Message) -> None:
                if message["type"] == "http.response.start":
                    self.answers.append((scope["method"], scope["path"], message["status"], site))
                await send(message)
            await app(scope, receive, sending)
        return recorded

    def status(self, path: str) -> set[int]:
        return {s for _, p, s, _ in self.answers if p == path}


@pytest.fixture
def served(settings: Settings, home: Path, fake: FakeUpstream) -> Iterator[tuple[str, Seen, FakeUpstream]]:
    seen = Seen()
    fake.served[:] = ["a", "b", "x", "newcomer"]
    with serve_in_thread(seen.wrap(fake.app())) as upstream:
        async def bench(db: Database) -> None:  # a review would raise a suggestion (x for a)
            await make_bench(db, ["a", "b", "x"], {"core": ["a", "b"]}, base_url=upstream + "/v1")
            await judge(db, "a", 2, 8, label="member")
            await judge(db, "b", 9, 1, label="member")
            await judge(db, "x", 8, 1)
        in_store(settings, bench)
        port = free_port()
        with serve_in_thread(seen.wrap(create_app(replace(settings, port=port))), port) as base:
            yield base, seen, fake


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1"])  # another site; another port of this site
def test_another_sites_page_cannot_read_or_spend_through_the_admin_routes(
        browser: Browser, served: tuple[str, Seen, FakeUpstream], settings: Settings, host: str) -> None:
    base, seen, fake = served

    async def hostile(request):
        return HTMLResponse(PAGE.format(base=base))

    with serve_in_thread(Starlette(routes=[Route("/", hostile)])) as other:
        context = browser.new_context()
        page = context.new_page()
        page.goto(other.replace("127.0.0.1", host) + "/")
        page.wait_for_load_state("load")  # every image, the script and the frame have had their answer
        site = "cross-site" if host == "localhost" else "same-site"
        for path, kind in EMBEDDED.items():
            asked = [a for a in seen.answers if a[1] == path and a[3] == site]
            assert asked, (path, kind, seen.answers)
            statuses = {a[2] for a in asked}
            assert statuses == ({200} if path == "/bench/suggestions" else {403}), (path, kind, statuses)
        assert [a for a in seen.answers if a[1] == "/v1/models"] == [], "no endpoint's listing was called"
        assert in_store(settings, rating_store.suggestions) == [], "nothing was reviewed"

        page.click("#dashboard")  # a link the user follows is a navigation: the dashboard opens
        expect(page).to_have_url(base + "/collections")
        expect(page.get_by_role("heading", level=1)).to_have_text("Collections")
        context.close()
    assert fake.calls == []
