"""Issue 29.6 in Chromium: after the admin token is typed, the login page goes only to a page of
this server, whatever ``?next=`` says (a second ``go:`` step after a space, another host in any
spelling, a script URL); and the dashboard's own ``go:`` step never leaves the origin even when a
form asks it to. Any request to the hostile host is answered by a stand-in page, so leaving would
be seen, never a network error."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, Route, expect

from benchwarmers_mcp.app import create_app
from benchwarmers_mcp.settings import Settings
from tests.kits.browser import Watch
from tests.kits.servers import free_port, serve_in_thread

pytestmark = pytest.mark.e2e

TOKEN = "a-long-enough-admin-token-for-tests"
EVIL = "evil.example"
HOSTILE = ["/%20go:https://evil.example/", "/x%20go:https://evil.example/", "//evil.example/", "/%5Cevil.example",
           "/%2F%2Fevil.example", "/%09/evil.example", "javascript:location.assign('https://evil.example/')",
           "https://evil.example/", "%2F%2Fevil.example"]


@pytest.fixture
def guarded(settings: Settings) -> Iterator[str]:
    port = free_port()
    with serve_in_thread(create_app(replace(settings, port=port, admin_token=TOKEN)), port) as base:
        yield base


def stand_in(context: BrowserContext, seen: list[str]) -> None:
    def answer(route: Route) -> None:
        seen.append(route.request.url)
        route.fulfill(status=200, content_type="text/html", body="<h1>Another site</h1>")
    context.route(lambda url: urlsplit(url).hostname == EVIL, answer)


def log_in(page: Page) -> None:
    page.get_by_label("Admin token").fill(TOKEN)
    page.get_by_role("button", name="Log in").click()


@pytest.mark.parametrize("target", HOSTILE, ids=lambda t: repr(t)[:40])
def test_after_the_login_the_browser_stays_on_this_server(browser: Browser, guarded: str, target: str) -> None:
    context = browser.new_context()
    seen: list[str] = []
    stand_in(context, seen)
    page = context.new_page()
    watch = Watch(page)
    page.goto(f"{guarded}/login?next={target}")
    log_in(page)
    expect(page).to_have_url(guarded + "/")
    expect(page.get_by_role("heading", level=1)).to_have_text("At a glance")
    page.goto(f"{guarded}/login?next={target}")  # logged in: the page offers a link onwards
    page.get_by_role("link", name="Go on").click()
    expect(page).to_have_url(guarded + "/")
    assert seen == [] and watch.hosts() == {guarded.removeprefix("http://")}, (seen, watch.hosts())
    context.close()


def test_a_page_of_this_server_is_where_the_login_goes(browser: Browser, guarded: str) -> None:
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{guarded}/login?next=/collections%3Fx%3D1")
    log_in(page)
    expect(page).to_have_url(guarded + "/collections?x=1")
    expect(page.get_by_role("heading", level=1)).to_have_text("Collections")
    context.close()


def test_the_dashboards_go_step_never_leaves_the_origin(browser: Browser, guarded: str) -> None:
    """A form whose ``data-then`` names other hosts (as a hostile ``next`` once could) posts, and
    its ``go:`` steps to another origin are never taken; the one to a page of this server is. Each
    navigation the page starts is written down (and held) by the Navigation API's ``navigate``
    event, which fires as ``location.assign`` is called; a ``done`` step marks the end."""
    context = browser.new_context()
    seen: list[str] = []
    stand_in(context, seen)
    page = context.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(guarded + "/login")
    page.evaluate("""(token) => {
      window.__to = [];
      navigation.addEventListener("navigate", (e) => { window.__to.push(e.destination.url); e.preventDefault(); });
      window.bw.handlers.done = () => { document.body.dataset.done = "yes"; };
      const form = document.querySelector('form[data-api="/login"]');
      form.dataset.then = "go:https://evil.example/ go://evil.example/ go:/\\\\evil.example go:javascript:alert(1) "
                        + "go:/collections done";
      form.querySelector('input[name="token"]').value = token;
      form.requestSubmit();
    }""", TOKEN)
    expect(page.locator("body")).to_have_attribute("data-done", "yes")
    assert page.evaluate("window.__to") == [guarded + "/collections"]
    assert seen == [] and dialogs == []
    context.close()
