"""Every dashboard page on every screen, in real Chromium (Debian's) against a real server process
filled as a lived-in bench (``tests/kits/realistic.py``: long names, failing, gone, resting and
retired models, every kind of table with rows): at 1280x800 and at 390x844 no page is wider than
its viewport (a table scrolls inside its card, a row's actions are a menu); every dialog on a page
has a Cancel that closes it, and a click on its backdrop closes it too; every table of times lists
the newest first. Beside them, what issue 31
asked of single pages: Models has At a glance's search and filters; a Discover row is one line,
its actions in a menu; the login page shows only its form; Ask without JavaScript posts, with a
``<noscript>`` note, and never puts the prompt in the address."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from benchwarmers_mcp.web.registry import discover
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.browser import Watch, shot
from tests.kits.realistic import lived_in
from tests.kits.servers import serve_in_thread, spawn_server

pytestmark = pytest.mark.e2e

VIEWPORTS = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}
SIDEBAR = [p.path for p in discover() if p.in_sidebar]  # every sidebar page (a panel's page: test_dashboard_judging)
WAIT = 90_000  # ms: a loaded 2-core machine is slow, never wrong
TOKEN = "admin-token-for-the-fit-tests-0123456789"
# the widest thing on the page beside the document itself: what makes it scroll sideways, named
WIDEST = """(() => {
  const width = document.documentElement.clientWidth;
  const over = [...document.querySelectorAll("body *")].filter((e) => {
    const box = e.getBoundingClientRect();
    if (box.width === 0 || box.right <= width + 1) return false;
    for (let up = e.parentElement; up; up = up.parentElement) {  // inside a box within the page that scrolls or clips: fine
      const style = getComputedStyle(up);
      if (["auto", "scroll", "hidden", "clip"].includes(style.overflowX) && up.getBoundingClientRect().right <= width + 1) {
        return false;
      }
    }
    return true;
  });
  const name = (e) => e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + (e.className && typeof e.className === "string" ? "." + e.className.split(" ").join(".") : "");
  return {scroll: document.documentElement.scrollWidth, width, over: over.slice(0, 5).map(name)};
})()"""

# each table whose rows start with a time (a <time datetime> in the first cell, or a chart's data-x):
# its times, in the order the rows are shown
TIME_TABLES = """[...document.querySelectorAll("table")].map((table) => {
  const times = [...table.querySelectorAll("tbody tr")].map((row) => {
    if (row.dataset.x !== undefined) return Number(row.dataset.x) * 1000;
    const stamp = row.cells[0] && row.cells[0].querySelector("time[datetime]");
    return stamp ? Date.parse(stamp.getAttribute("datetime")) : null;
  }).filter((t) => t !== null && !Number.isNaN(t));
  return {table: table.id || (table.caption ? table.caption.textContent.trim() : "a table"), times};
}).filter((t) => t.times.length > 1)"""


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real server process on a lived-in bench (no admin token: the pages open on loopback), with
    one real endpoint (a fake upstream on loopback) that Discover's rows can be added through."""
    root = tmp_path_factory.mktemp("lived")
    fake = FakeUpstream()
    fake.served = ["gpt-4o-mini"]
    with serve_in_thread(fake.app()) as upstream, spawn_server(root / "home") as base:
        lived_in(base, root)
        with httpx.Client(base_url=base, timeout=60) as api:
            added = api.post("/api/endpoint", json={"name": "local", "base": upstream + "/v1",
                                                    "key": "sk-local-0123456789abc"})
            assert added.status_code == 201, added.text
        yield base


def opened(browser: Browser, base: str, viewport: str, **extra: object) -> tuple[Page, Watch]:
    context = browser.new_context(base_url=base, viewport=VIEWPORTS[viewport], **extra)  # type: ignore[arg-type]
    context.set_default_timeout(WAIT)
    context.set_default_navigation_timeout(WAIT)
    page = context.new_page()
    return page, Watch(page)


def fits(page: Page) -> None:
    seen = page.evaluate(WIDEST)
    assert seen["scroll"] <= seen["width"], f"{page.url} is {seen['scroll']} px wide at {seen['width']}: {seen['over']}"
    assert not seen["over"], f"{page.url}: wider than the viewport: {seen['over']}"


def dialogs_close(page: Page) -> int:
    """Each kind of dialog a button opens (the first of ``facts-*``, ``edit-*``...; an opener in a
    row's menu too): its Cancel closes it, and so does a click on its backdrop."""
    openers = page.locator("[data-open]")
    done = set()
    for i in range(openers.count()):
        opener = openers.nth(i)
        target = str(opener.get_attribute("data-open"))
        kind = target.split("-", 1)[0]
        menu = opener.locator("xpath=ancestor::details[contains(@class, 'menu')]")
        if kind in done or not (opener.is_visible() or (menu.count() and menu.first.is_visible())):
            continue
        done.add(kind)
        dialog = page.locator(f"dialog#{target}")
        if not opener.is_visible():
            menu.first.locator("summary").click()
        opener.click()
        expect(dialog).to_be_visible()
        fits(page)
        cancel = dialog.locator("[data-close]").filter(has_text="Cancel")
        assert cancel.count() >= 1, f"dialog {target} has no Cancel"
        cancel.first.click()
        expect(dialog).to_be_hidden()
        if not opener.is_visible():
            menu.first.locator("summary").click()
        opener.click()
        expect(dialog).to_be_visible()
        page.mouse.click(3, 3)  # the backdrop: a modal dialog is centred, and never reaches the corner
        expect(dialog).to_be_hidden()
    asks = page.locator("button[data-confirm]").filter(visible=True)
    if asks.count():  # the confirmation asked before a destructive action: Cancel, or the backdrop, and nothing is done
        confirm = page.locator("dialog#confirm-dialog")
        for close in (lambda: confirm.get_by_role("button", name="Cancel").click(), lambda: page.mouse.click(3, 3)):
            asks.first.click()
            expect(confirm).to_be_visible()
            close()
            expect(confirm).to_be_hidden()
        done.add("confirm-dialog")
    return len(done)


@pytest.mark.parametrize("viewport", list(VIEWPORTS))
@pytest.mark.parametrize("path", SIDEBAR)
def test_every_page_fits_its_viewport_and_every_dialog_closes(browser: Browser, bench: str, path: str,
                                                              viewport: str) -> None:
    page, watch = opened(browser, bench, viewport)
    page.goto(path, wait_until="load")
    expect(page.locator("main")).to_be_visible()
    shot(page, f"fit-{viewport}-{path.strip('/') or 'glance'}")
    fits(page)
    for menu in page.locator("details.menu").all()[:3]:  # an open row menu stays inside the page too
        if menu.is_visible():
            menu.locator("summary").click()
            fits(page)
            menu.locator("summary").click()
    dialogs_close(page)
    for table in page.evaluate(TIME_TABLES):  # every time table lists the newest first
        assert table["times"] == sorted(table["times"], reverse=True), f"{path}: {table['table']} is not newest first"
    assert watch.errors == [], watch.errors
    page.context.close()


@pytest.mark.parametrize("viewport", list(VIEWPORTS))
def test_models_has_the_search_and_filters_at_a_glance_has(browser: Browser, bench: str, viewport: str) -> None:
    page, watch = opened(browser, bench, viewport)
    for path in ("/", "/registered"):
        page.goto(path, wait_until="load")
        search = page.get_by_role("searchbox").first
        expect(search).to_be_visible()
        table = search.get_attribute("data-table")
        rows = page.locator(f"#{table} tbody tr[data-alias]")
        shown = rows.filter(visible=True)
        everyone = shown.count()
        assert everyone >= 10, f"{path}: {everyone} rows"
        search.fill("heron")
        expect(shown).to_have_count(1)
        search.fill("")
        expect(shown).to_have_count(everyone)
        status = page.locator(f"select#{table}-status")
        status.select_option("gone")
        expect(shown).to_have_count(1)
        assert shown.first.get_attribute("data-status") == "gone"
        status.select_option("")
        page.locator(f"input[data-table={table}][data-show=retired]").check()
        expect(shown).to_have_count(everyone + 1)  # the retired one
        fits(page)
    assert watch.errors == [], watch.errors
    page.context.close()


@pytest.mark.parametrize("viewport", list(VIEWPORTS))
def test_a_discover_row_is_one_line_with_its_actions_in_a_menu(browser: Browser, bench: str, viewport: str) -> None:
    page, watch = opened(browser, bench, viewport)
    page.goto("/discover?find=llama", wait_until="load")
    rows = page.locator("#discover-table tbody tr")
    assert rows.count() >= 3
    line = page.evaluate("parseFloat(getComputedStyle(document.querySelector('#discover-table td')).lineHeight)")
    heights = [rows.nth(i).bounding_box()["height"] for i in range(min(rows.count(), 20))]  # type: ignore[index]
    assert max(heights) < 2 * line + 24, f"a row wraps: {heights} at a line of {line}"
    menu = rows.locator("details.menu").first  # added by name through the one real endpoint
    expect(menu).to_be_visible()
    menu.locator("summary").click()
    expect(menu.get_by_role("button").first).to_be_visible()
    fits(page)
    assert watch.errors == [], watch.errors
    page.context.close()


@pytest.mark.parametrize("viewport", list(VIEWPORTS))
def test_the_login_page_shows_only_its_form_before_sign_in(browser: Browser, tmp_path: Path, viewport: str) -> None:
    with spawn_server(tmp_path / "home", BENCHWARMERS_ADMIN_TOKEN=TOKEN) as base:
        page, watch = opened(browser, base, viewport)
        page.goto("/", wait_until="load")  # sent to the login page
        expect(page.get_by_label("Admin token")).to_be_visible()
        expect(page.locator("nav.sidebar")).to_have_count(0)
        expect(page.get_by_text("Log out")).to_have_count(0)
        expect(page.get_by_role("link", name="Ask")).to_have_count(0)
        fits(page)
        page.get_by_label("Admin token").fill(TOKEN)
        page.get_by_role("button", name="Log in").click()
        expect(page.locator("nav.sidebar")).to_be_visible()
        expect(page.get_by_role("button", name="Log out")).to_be_visible()
        assert watch.errors == [], watch.errors
        page.context.close()


def test_ask_without_javascript_posts_and_says_why_it_needs_it(browser: Browser, bench: str) -> None:
    page, _ = opened(browser, bench, "phone", java_script_enabled=False)
    page.goto("/ask", wait_until="load")
    expect(page.locator("#ask-noscript")).to_be_visible()
    expect(page.locator("#ask-noscript")).to_contain_text("needs JavaScript")
    prompt = "secret-prompt-never-in-the-url"
    page.get_by_label("Prompt").fill(prompt)
    with page.expect_request(lambda r: r.resource_type == "document" and r.url != page.url) as sent:
        page.locator("#ask-form [type=submit]").first.click()
    request = sent.value
    assert request.method == "POST" and prompt not in request.url, (request.method, request.url)
    assert prompt in (request.post_data or "")
    page.wait_for_load_state("load")
    assert prompt not in page.url
    page.context.close()
