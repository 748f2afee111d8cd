"""Access to the dashboard: with an admin token, pages redirect to the login page (303) and the
admin API answers 401 until the browser logs in (cookie HttpOnly, SameSite=Strict); and a page
on another origin, in a browser that is logged in, cannot write."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, expect
from starlette.applications import Starlette
from starlette.responses import HTMLResponse
from starlette.routing import Route

from tests.kits.browser import Watch, shot
from tests.kits.servers import serve_in_thread, spawn_server
from tests.kits.waits import ANSWER

pytestmark = pytest.mark.e2e

TOKEN = "a-long-enough-admin-token-for-tests"


def log_in(page, token: str) -> None:
    page.get_by_label("Admin token").fill(token)
    page.get_by_role("button", name="Log in").click()


def test_login_with_the_admin_token_and_refused_without(browser: Browser, home: Path) -> None:
    with spawn_server(home, BENCHWARMERS_ADMIN_TOKEN=TOKEN) as base:
        page_reply = httpx.get(base + "/collections", follow_redirects=False, timeout=ANSWER)
        assert page_reply.status_code == 303
        assert page_reply.headers["location"] == "/login?next=/collections"
        assert httpx.get(base + "/api/status", timeout=ANSWER).status_code == 401
        assert httpx.get(base + "/api/events", timeout=ANSWER).status_code == 401
        assert httpx.get(base + "/login", timeout=ANSWER).status_code == 200  # the login page and its assets are open

        context = browser.new_context(base_url=base)
        page = context.new_page()
        watch = Watch(page)
        page.goto("/collections")
        expect(page).to_have_url(re.compile(r"/login\?next=/collections$"))
        shot(page, "login")
        log_in(page, "not-the-token-at-all")
        expect(page.get_by_role("alert")).to_have_text("wrong admin token")
        log_in(page, TOKEN)
        expect(page).to_have_url(base + "/collections")
        expect(page.get_by_role("heading", level=1)).to_have_text("Collections")
        [cookie] = [c for c in context.cookies() if c["name"] == "bw_session"]
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and not cookie["secure"]  # http here
        assert page.evaluate("document.cookie") == ""  # no script can read it
        expect(page.get_by_role("status").filter(has_text="Live")).to_have_text("Live")

        page.get_by_role("button", name="Log out").click()
        expect(page).to_have_url(re.compile(r"/login$"))
        page.goto("/")
        expect(page).to_have_url(re.compile(r"/login\?next=/$"))
        # the only errors: the wrong token's 401, as the browser reports a refused request
        assert all("401" in e for e in watch.errors), watch.errors
        context.close()


EVIL = """<!doctype html><html><body><h1>Another site</h1>
<form id="f" method="post" action="{base}/api/gateway-key" enctype="text/plain">
<input name='{{"name": "evil-form", "x": "' value='"}}'></form>
<script>
window.results = (async () => {{
  const out = {{}};
  try {{
    const r = await fetch("{base}/api/collection", {{method: "POST", credentials: "include",
      headers: {{"Content-Type": "application/json"}}, body: JSON.stringify({{name: "evil", members: ["sim-sage"]}})}});
    out.json = r.status;
  }} catch (e) {{ out.json = "refused: " + e.name; }}
  try {{
    await fetch("{base}/api/gateway-key", {{method: "POST", mode: "no-cors", credentials: "include",
      headers: {{"Content-Type": "text/plain"}}, body: JSON.stringify({{name: "evil-fetch"}})}});
    out.simple = "sent";
  }} catch (e) {{ out.simple = "refused: " + e.name; }}
  return out;
}})();
</script></body></html>"""


def test_a_page_on_another_origin_cannot_write(browser: Browser, home: Path) -> None:
    with spawn_server(home, args=("demo",), BENCHWARMERS_ADMIN_TOKEN=TOKEN) as base:
        log = home.parent / f"server-{base.rsplit(':', 1)[1]}.log"

        async def evil(request):
            return HTMLResponse(EVIL.format(base=base))

        with serve_in_thread(Starlette(routes=[Route("/", evil)])) as other:
            context = browser.new_context()
            page = context.new_page()
            page.goto(base + "/login")
            log_in(page, TOKEN)
            expect(page.get_by_role("heading", level=1)).to_have_text("At a glance")
            # same site (127.0.0.1), another origin (another port): the login cookie goes along
            page.goto(other)
            results = page.evaluate("window.results")
            assert results["json"].startswith("refused")  # its preflight is refused
            assert results["simple"] == "sent"  # it leaves, and the guard refuses it (below)
            with page.expect_navigation() as navigation:
                page.evaluate("document.getElementById('f').submit()")
            assert navigation.value.status == 403
            assert "foreign Origin refused" in page.content()
            context.close()
        collections = httpx.get(base + "/api/collections", headers={"Authorization": f"Bearer {TOKEN}"},
                                timeout=ANSWER).json()
        keys = httpx.get(base + "/api/gateway-keys", headers={"Authorization": f"Bearer {TOKEN}"},
                         timeout=ANSWER).json()
    assert "evil" not in {c["name"] for c in collections["collections"]}
    assert not keys["keys"]
    lines = log.read_text()
    assert re.search(r"OPTIONS /api/collection 403", lines)
    assert len(re.findall(r"POST /api/gateway-key 403", lines)) == 2
