"""The dashboard in a real browser against a real server process: from an empty data folder, the
first run (an endpoint on a fake upstream, tried then saved; three models; a collection), a
question whose seats arrive one by one (the slow one last), a verdict on each seat found in the
store; then every page, each screenshot (artifacts/screenshots/), each under 300 KB, with no
console error and no request to any host but the server."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from playwright.sync_api import Browser, expect

from benchwarmers_mcp.store import verdicts as verdict_store
from benchwarmers_mcp.store.models import alias_for
from benchwarmers_mcp.store.verdicts import VerdictLine
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.browser import Watch, shot
from tests.kits.servers import spawn_server
from tests.kits.store import in_store

pytestmark = pytest.mark.e2e

SECRET = "sk-fake-upstream-key-1234567890"
SERVED = ["alpha", "beta?latency=0.6", "slow?latency=4"]
PAGES = ["At a glance", "Ask", "Collections", "Endpoints", "Models", "Quotas", "Logs", "Health", "Settings", "Info"]
MOST_BYTES = 300_000
# bytes on the wire for the document and everything it loaded, and when it became usable
WEIGH = """(() => {
  const nav = performance.getEntriesByType("navigation")[0];
  const bytes = [nav, ...performance.getEntriesByType("resource")].reduce((sum, e) => sum + e.transferSize, 0);
  return [bytes, nav.domInteractive, nav.loadEventEnd];
})()"""

# every seat section, in the order it joined the page (recorded by the test, not by the page)
ARRIVALS = """
window.__arrivals = [];
new MutationObserver((changes) => {
  for (const change of changes) for (const node of change.addedNodes) {
    if (node.nodeType === 1 && node.matches("section[aria-labelledby]") && node.closest("#seats")) {
      window.__arrivals.push(document.getElementById(node.getAttribute("aria-labelledby")).textContent);
    }
  }
}).observe(document, { childList: true, subtree: true });
"""


def verdict_rows(home: Path) -> list[VerdictLine]:
    """The verdict log, read through the store."""
    return in_store(home, verdict_store.log)


def first_run(page, upstream: str) -> None:
    page.goto("/")
    expect(page.get_by_role("heading", name="Add your first endpoint")).to_be_visible()
    shot(page, "first-run-1-endpoint")
    page.get_by_label("Name", exact=True).fill("fake")
    page.get_by_label("Base URL").fill(upstream)
    key = page.get_by_label("API key")
    expect(key).to_have_attribute("type", "password")
    key.fill(SECRET)
    save = page.get_by_role("button", name="Save", exact=True)
    expect(save).to_be_disabled()  # Test before Save
    page.get_by_role("button", name="Test").click()
    expect(page.get_by_role("status").filter(has_text="Answered")).to_contain_text("3 models served")
    save.click()

    expect(page.get_by_role("heading", name="Register models from what it serves")).to_be_visible()
    for served in SERVED:
        page.get_by_role("checkbox", name=re.compile("^" + re.escape(served) + " as ")).check()
    shot(page, "first-run-2-models")
    page.get_by_role("button", name="Register selected").click()

    expect(page.get_by_role("heading", name="Make your first collection")).to_be_visible()
    page.get_by_label("Name", exact=True).fill("core")
    page.get_by_label("Description").fill("code review")
    shot(page, "first-run-3-collection")
    page.get_by_role("button", name="Save collection").click()
    ask = page.get_by_role("link", name="Ask core")
    expect(ask).to_be_visible()
    shot(page, "first-run-4-ask")
    ask.click()


def ask_and_judge(page, home: Path) -> dict[str, str]:
    """Ask core; returns each seat's call id by section name."""
    expect(page).to_have_url(re.compile(r"/ask\?collection=core$"))
    expect(page.get_by_label("Collection")).to_have_value("core")
    page.get_by_label("Prompt").fill("Where can refresh() return a stale value?")
    page.get_by_role("button", name="Ask", exact=True).click()
    names = [f"member · {alias_for(s)}" for s in SERVED]
    first, _, slow = (page.get_by_role("region", name=n, exact=True) for n in names)
    expect(first).to_be_visible()
    # the fast seats are on the page while the slow one is still answering
    expect(page.get_by_role("region", name=names[1], exact=True)).to_be_visible()
    expect(slow).to_have_count(0)
    expect(page.locator("#panel-waiting")).to_contain_text(alias_for(SERVED[2]))
    expect(slow).to_be_visible()
    assert page.evaluate("window.__arrivals") == names  # one by one, in finish order, the slow seat last
    expect(page.get_by_role("status").filter(has_text="Done:")).to_be_visible()

    calls = {n: page.get_by_role("region", name=n, exact=True).locator("code").first.inner_text() for n in names}
    sections = [page.get_by_role("region", name=n, exact=True) for n in names]
    sections[0].get_by_role("button", name="Useful", exact=True).click()
    sections[1].get_by_text("Note and claims").click()
    sections[1].get_by_label("Note").fill("right about the cache")
    sections[1].get_by_label("Real claims, one a line").fill("the race in refresh()")
    sections[1].get_by_role("button", name="Useful", exact=True).click()
    sections[2].get_by_text("Note and claims").click()
    sections[2].get_by_label("False claims, one a line").fill("the SQL injection\nthe missing lock")
    sections[2].get_by_role("button", name="Not useful").click()
    for section, said in zip(sections, ("Saved: useful", "Saved: useful", "Saved: not useful"), strict=True):
        expect(section.get_by_role("status")).to_have_text(said)
    expect(sections[2].get_by_role("button", name="Not useful")).to_have_attribute("aria-pressed", "true")
    shot(page, "ask-judged")
    return calls


def test_first_run_ask_judge_and_every_page(browser: Browser, fake: FakeUpstream, upstream: str, home: Path) -> None:
    fake.served = list(SERVED)
    with spawn_server(home) as base:
        context = browser.new_context(base_url=base)
        page = context.new_page()
        page.add_init_script(ARRIVALS)
        watch = Watch(page)
        first_run(page, upstream)
        calls = ask_and_judge(page, home)

        rows = verdict_rows(home)
        verdicts = [r.verdict for r in rows]
        assert [(v.call, v.useful) for v in verdicts] == [(c, u) for c, u in zip(calls.values(), (True, True, False), strict=True)]
        assert verdicts[1].note == "right about the cache" and verdicts[1].real == ("the race in refresh()",)
        assert verdicts[2].false == ("the SQL injection", "the missing lock")
        assert {r.key_name for r in rows} == {"dashboard"}

        for title in PAGES:  # every page through the sidebar
            page.get_by_role("navigation", name="Dashboard").get_by_role("link", name=title, exact=True).click()
            expect(page.get_by_role("heading", level=1)).to_have_text(title)
            shot(page, f"page-{title}")
            assert SECRET not in page.content()
            if title == "Settings":  # which secrets are set: named, never shown
                expect(page.get_by_text("fake: set, from the keys file")).to_be_visible()
        assert not [p for p in home.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]

        host = urlsplit(base).netloc
        assert watch.hosts() == {host}, watch.requests
        assert watch.errors == []
        context.close()


# every control that takes focus, without a name a screen reader would say
UNNAMED = """(() => [...document.querySelectorAll("a[href], button, input, select, textarea, summary")]
  .filter((el) => el.type !== "hidden" && !el.closest("[hidden], dialog:not([open])"))
  .filter((el) => {
    const named = (el.getAttribute("aria-label") || "").trim()
      || (el.getAttribute("aria-labelledby") || "").split(" ").some((id) => document.getElementById(id)?.textContent.trim())
      || [...(el.labels || [])].some((l) => l.textContent.trim())
      || (["A", "BUTTON", "SUMMARY"].includes(el.tagName) && el.textContent.trim());
    return !named;
  }).map((el) => el.outerHTML.slice(0, 120)))()"""


def seed(base: str) -> None:
    """A few panels on the demo's simulated models, some judged."""
    with httpx.Client(base_url=base, timeout=60) as client:
        for n in range(3):
            reply = client.post("/v1/chat/completions", json={"model": "bench/demo", "messages": [
                {"role": "user", "content": f"question {n}"}]})
            assert reply.status_code == 200, reply.text
            for seat in reply.json()["bench"]["seats"][: n + 1]:
                assert client.post("/bench/verdict", json={"call": seat["call"], "useful": n != 1}).status_code == 200


def test_each_page_is_light_and_every_control_named(browser: Browser, home: Path) -> None:
    """The first load of each page, with an empty cache and a bench with some history, under 300 KB
    (the figures are printed; timings are reported, never asserted); every control has a name."""
    with spawn_server(home, args=("demo",)) as base:
        seed(base)
        for path in ("/", "/ask", "/collections", "/endpoints", "/registered", "/quotas", "/logs", "/settings",
                     "/info", "/login"):
            context = browser.new_context(base_url=base)
            page = context.new_page()
            watch = Watch(page)
            page.goto(path)
            page.wait_for_load_state("load")
            weight, interactive, loaded = page.evaluate(WEIGH)
            page.goto(path)  # again, in a browser that has seen it (cached assets, a warm renderer)
            page.wait_for_load_state("load")
            _, again, _ = page.evaluate(WEIGH)
            print(f"{path}: {weight / 1024:.1f} KB, interactive {interactive:.0f} ms (cold), {again:.0f} ms (warm),"
                  f" loaded {loaded:.0f} ms")
            assert weight < MOST_BYTES, (path, weight)
            assert page.evaluate(UNNAMED) == [], path
            assert watch.errors == [], (path, watch.errors)
            assert watch.hosts() == {urlsplit(base).netloc}
            context.close()


def test_asking_and_judging_from_the_keyboard(browser: Browser, home: Path) -> None:
    with spawn_server(home, args=("demo",)) as base:
        context = browser.new_context(base_url=base)
        page = context.new_page()
        watch = Watch(page)
        page.goto("/ask")
        expect(page.get_by_label("Prompt")).to_be_focused()
        page.keyboard.type("What does this function return?")
        page.keyboard.press("Control+Enter")
        expect(page.get_by_role("status").filter(has_text="Done:")).to_be_visible()
        for _ in range(200):  # Tab until a Useful button has the focus
            page.keyboard.press("Tab")
            if page.evaluate("document.activeElement.textContent") == "Useful":
                break
        page.keyboard.press("Enter")
        expect(page.get_by_role("status").filter(has_text="Saved: useful")).to_have_count(1)

        page.goto("/collections")
        opener = page.get_by_role("button", name="New collection")
        opener.focus()
        page.keyboard.press("Enter")
        dialog = page.get_by_role("dialog", name="New collection")
        expect(dialog).to_be_visible()
        page.keyboard.press("Escape")
        expect(dialog).to_be_hidden()
        expect(opener).to_be_focused()
        assert watch.errors == []
        context.close()
