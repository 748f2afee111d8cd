"""Judging every panel from the dashboard, in Chromium against a real server (issue 30): a panel
asked through the official ``openai`` SDK and one through MCP (the ``mcp`` client) are in To judge
with their answers and who asked; the newest panel's five seats are judged from the keyboard alone
(the keys the page shows, from ``judge_keys.py``) in five presses, on to the next panel after the
last, and after a reload every verdict is in the store; the other keys move between seats and open a note
typed and sent from the keyboard; errored seats are listed apart with no Useful. On a
panel's page, a claim two seats made is marked false once and recorded on both seats, moving both
models' ratings (and a verdict sent after it keeps it); a seat answer holding HTML and a script is shown as text; a route
conversation's turn is judged on its own call id. The new pages have no sideways scroll at 1280x800
and 390x844. No console error, no request to another host."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import anyio
import httpx
import httpx2
import openai
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT
from mcp.types import Implementation
from playwright.sync_api import Browser, Page, expect

from benchwarmers_mcp.judge_keys import KEYS
from benchwarmers_mcp.store import Database
from benchwarmers_mcp.store import collections as collection_store
from benchwarmers_mcp.store.collections import Collection, GatewaySettings
from tests.e2e.test_dashboard import UNNAMED
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.browser import Watch, shot
from tests.kits.judging import ANSWERS, answering, lines_of, wrong_counts
from tests.kits.seed import seed_async
from tests.kits.store import in_store, store_of

pytestmark = pytest.mark.e2e

WAIT = 90_000  # ms: a busy machine is slow, never wrong
CLAUDE = Implementation(name="claude-code", version="2.1.3")
HOSTILE = ('Looks fine overall. <b>bold?</b> <script>window.__pwned = 1</script><img src="x" '
           'onerror="window.__pwned = 2">\n\n- `auth.py:9` compares tokens with `==`.')
SAYS = {**ANSWERS, "delta": "- `db.py:7` opens a connection and never closes it.", "epsilon": HOSTILE}
ANSWERING = list(SAYS)  # alpha, beta, gamma, delta, epsilon: member1..member5
KEY = {k.action: k.key for k in KEYS}
NO_SIDEWAYS = "document.documentElement.scrollWidth <= document.documentElement.clientWidth"


@pytest.fixture(autouse=True)
def _patient() -> None:
    expect.set_options(timeout=WAIT)


@pytest.fixture
def bench_home(home: Path, upstream: str, fake: FakeUpstream) -> Path:
    """Five answering models and one that fails, all members of ``core``; ``agent`` a route
    collection whose members are the failing one and alpha."""
    for alias, text in SAYS.items():
        fake.responders[alias] = answering(text)

    async def make(db: Database) -> None:  # beside Playwright's loop: in a thread of its own (as in_store)
        await collection_store.save_gateway_settings(db, GatewaySettings(max_calls=6))  # six seats a panel
        await seed_async(home, base_url=upstream, served={**{a: a for a in SAYS}, "broken": "broken?fail=500"},
                         collections={"core": [*ANSWERING, "broken"]})
        async with store_of(home) as store:
            await collection_store.save(store, Collection("agent", ("broken", "alpha"), "an agent", reply="route"))
    in_store(home, make)
    return home


def ask_sdk(base: str, prompt: str, collection: str = "core") -> dict:
    client = openai.OpenAI(base_url=base + "/v1", api_key="not-needed", timeout=120, max_retries=0)
    reply = client.chat.completions.create(model=f"bench/{collection}", messages=[{"role": "user", "content": prompt}])
    return dict((reply.model_extra or {}).get("bench") or {})


def ask_mcp(base: str, prompt: str) -> None:
    async def go() -> None:
        timeout = httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT)
        async with httpx2.AsyncClient(timeout=timeout) as http, \
                Client(streamable_http_client(base + "/mcp", http_client=http), client_info=CLAUDE) as client:
            result = await client.call_tool("ask", {"collection": "core", "prompt": prompt})
        assert not result.is_error, result.content[0].text
    with ThreadPoolExecutor(1) as pool:  # beside Playwright's loop
        pool.submit(anyio.run, go).result()


def panel_of(base: str, source: str) -> dict:
    (panel,) = httpx.get(base + "/api/panels", params={"source": source}, timeout=60).json()["panels"]
    return dict(panel)


def new_page(browser: Browser, base: str, width: int = 1280, height: int = 800) -> tuple[Page, Watch]:
    context = browser.new_context(base_url=base, viewport={"width": width, "height": height})
    page = context.new_page()
    page.set_default_timeout(WAIT)
    return page, Watch(page)


def test_the_inbox_is_judged_from_the_keyboard_alone(browser: Browser, bench_home: Path, gateway: str) -> None:
    ask_sdk(gateway, "Review the cache change (from the SDK).")
    ask_mcp(gateway, "Review the cache change (from MCP).")
    sdk, mcp = panel_of(gateway, "gateway"), panel_of(gateway, "mcp")
    assert sdk["client"] == f"OpenAI/Python {openai.__version__}" and mcp["client"] == "claude-code/2.1.3"

    page, watch = new_page(browser, gateway)
    page.goto("/")
    badge = page.locator("#badge-judge")  # beside the sidebar's link
    expect(badge).to_have_text("10")  # five owed on each panel
    page.get_by_role("navigation", name="Dashboard").get_by_role("link", name="To judge", exact=True).click()
    expect(page.get_by_role("heading", level=1)).to_have_text("To judge")
    panels = page.locator(".judge-panel")
    expect(panels).to_have_count(2)
    newest, older = panels.nth(0), panels.nth(1)
    expect(newest).to_have_attribute("data-panel", mcp["id"])  # newest first
    expect(older).to_have_attribute("data-panel", sdk["id"])
    expect(newest).to_contain_text("Asked by MCP · claude-code/2.1.3")
    expect(older).to_contain_text(f"OpenAI/Python {openai.__version__}")
    for panel in (newest, older):  # every answer, rendered: alpha's bullets are a list
        expect(panel.locator(".judge-seat")).to_have_count(5)
        expect(panel.locator(".judge-seat").nth(0).locator(".answer li")).to_have_count(2)
        expect(panel.locator(".judge-seat").nth(0)).to_contain_text("never expires the entries")
        errored = panel.locator(".errored")  # apart, and with no verdict controls
        expect(errored).to_contain_text("broken")
        expect(errored.get_by_role("button")).to_have_count(0)
    for k in KEYS:  # the keys, shown
        expect(page.locator(f'#judge-keys kbd[data-action="{k.action}"]')).to_have_text(k.key)
    shot(page, "to-judge")

    # the keyboard alone: the first seat has the focus; Useful / Not useful move on to the next seat
    # owed, and after the panel's last to the next panel
    expect(newest.locator(".judge-seat").nth(0)).to_be_focused()
    wanted = [True, True, False, True, False]
    presses = 0
    for useful in wanted:
        page.keyboard.press(KEY["useful" if useful else "not_useful"])
        presses += 1
    assert presses <= 6  # five here; six with the next panel's key
    expect(older.locator(".judge-seat").nth(0)).to_be_focused()
    page.keyboard.press(KEY["next_panel"])  # there is none after it on this page
    expect(page.locator("#judge-status")).to_contain_text("No more panels on this page")
    expect(older.locator(".judge-seat").nth(0)).to_be_focused()
    for n, useful in enumerate(wanted):
        expect(newest.locator(".judge-seat").nth(n).get_by_role("status")).to_have_text(
            "Saved: useful" if useful else "Saved: not useful")
    expect(badge).to_have_text("5")

    page.reload()
    expect(page.locator(".judge-panel")).to_have_count(1)  # the judged panel owes nothing now
    expect(page.locator(".judge-panel")).to_have_attribute("data-panel", sdk["id"])
    calls = [s["call"] for s in mcp["seats"] if s["alias"] in ANSWERING]
    assert [s["alias"] for s in mcp["seats"] if s["alias"] in ANSWERING] == ANSWERING
    for call, useful in zip(calls, wanted, strict=True):
        lines = lines_of(bench_home, call)
        assert [line.verdict.useful for line in lines] == [useful], call
        assert lines[-1].key_name == "dashboard"

    # the other keys, on the panel left: next and previous seat, the note opened, typed, left, sent
    seats = page.locator(".judge-seat")
    expect(seats.nth(0)).to_be_focused()
    page.keyboard.press(KEY["next_seat"])
    expect(seats.nth(1)).to_be_focused()
    page.keyboard.press(KEY["previous_seat"])
    expect(seats.nth(0)).to_be_focused()
    page.keyboard.press(KEY["note"])
    expect(seats.nth(0).get_by_label("Note")).to_be_focused()
    page.keyboard.type("checked against cache.py: right")  # keys typed in the note are the note's
    page.keyboard.press("Escape")
    expect(seats.nth(0)).to_be_focused()
    page.keyboard.press(KEY["useful"])
    expect(seats.nth(0).get_by_role("status")).to_have_text("Saved: useful")
    expect(seats.nth(1)).to_be_focused()
    first = next(s["call"] for s in sdk["seats"] if s["alias"] == "alpha")
    assert [(line.verdict.useful, line.verdict.note) for line in lines_of(bench_home, first)] == [
        (True, "checked against cache.py: right")]
    assert page.evaluate(NO_SIDEWAYS) and page.evaluate(UNNAMED) == []
    assert watch.errors == [] and watch.hosts() == {urlsplit(gateway).netloc}, (watch.errors, watch.requests)


def test_a_panels_page_claims_marked_once_html_as_text_and_a_route_turn(browser: Browser, bench_home: Path,
                                                                       gateway: str) -> None:
    asked = ask_sdk(gateway, "Review the cache change.")
    ask_sdk(gateway, "Open the file and fix it.", collection="agent")
    calls = {s["alias"]: s["call"] for s in asked["seats"]}
    page, watch = new_page(browser, gateway)
    page.add_init_script("window.__pwned = 0")

    # from Logs to the panel's page
    page.goto("/logs")
    page.get_by_role("link", name=asked["panel"], exact=True).click()
    expect(page).to_have_url(re.compile(f"/panels/{asked['panel']}$"))
    expect(page.get_by_role("heading", level=1)).to_have_text(f"Panel {asked['panel']}")
    expect(page.locator("#main")).to_contain_text(f"gateway (no key) · OpenAI/Python {openai.__version__}")
    expect(page.locator(".prompt").first).to_have_text("Review the cache change.")
    alpha = page.get_by_role("region", name="member · alpha", exact=True)
    expect(alpha).to_contain_text(calls["alpha"])
    expect(page.get_by_role("region", name="member · broken", exact=True).get_by_role(
        "button", name="Useful", exact=True)).to_have_count(0)  # errored: never useful

    # a seat's HTML and script are text
    hostile = page.get_by_role("region", name="member · epsilon", exact=True).locator(".answer")
    expect(hostile).to_contain_text('<script>window.__pwned = 1</script><img src="x" onerror="window.__pwned = 2">')
    expect(hostile).to_contain_text("<b>bold?</b>")
    assert hostile.locator("script, img, b").count() == 0
    expect(hostile.locator("li code").first).to_have_text("auth.py:9")  # and still markdown
    assert page.evaluate("window.__pwned") == 0

    # the claim alpha and beta both made: marked false once, on both seats
    shared = page.locator("#claims-map li", has_text="never expires").filter(has_text="2 of")
    expect(shared).to_have_count(1)
    expect(page.locator("#claims-map")).to_contain_text("Only one seat said (look here first)")
    with httpx.Client(timeout=60) as http:
        wrong_before = wrong_counts(http, gateway)
    shared.get_by_role("button", name="False", exact=True).click()
    expect(page.locator("#claims-status")).to_have_text("Marked false on 2 seats.")
    expect(shared.locator("[data-claim-state]")).to_have_text("false")
    marked = {alias: lines_of(bench_home, calls[alias])[-1].verdict for alias in ("alpha", "beta")}
    assert all(len(v.false) == 1 and v.useful is None for v in marked.values()), marked
    assert "never expires" in marked["alpha"].false[0] and "never expires" in marked["beta"].false[0]
    with httpx.Client(timeout=60) as http:  # both models' "confidently wrong" evidence moved
        wrong_after = wrong_counts(http, gateway)
    assert {a: wrong_after[a] - wrong_before.get(a, 0) for a in ("alpha", "beta", "gamma")} == {
        "alpha": 1, "beta": 1, "gamma": 0}
    # its form now holds the mark, so a verdict sent after it keeps it (a verdict replaces whole)
    expect(alpha.get_by_label("False claims, one a line")).to_have_value(marked["alpha"].false[0])
    alpha.get_by_role("button", name="Useful", exact=True).click()
    expect(alpha.get_by_role("status")).to_have_text("Saved: useful")
    latest = lines_of(bench_home, calls["alpha"])[-1].verdict
    assert (latest.useful, latest.false) == (True, marked["alpha"].false)
    page.reload()
    expect(alpha.locator(".history li")).to_have_count(2)  # the mark, then the verdict
    expect(page.locator("#claims-map li", has_text="never expires").filter(has_text="2 of").locator(
        "[data-claim-state]")).to_have_text("false")
    shot(page, "panel-page")
    panel_path = f"/panels/{asked['panel']}"

    # a route conversation: its turn, who answered, judged on the turn's own call id
    page.goto("/logs")
    conversation = page.locator("#route-log tbody tr").first.locator("a").first
    conversation_id = conversation.inner_text()
    conversation.click()
    expect(page.get_by_role("heading", level=1)).to_have_text(f"Route conversation {conversation_id}")
    turn = page.locator("section.turn").first
    expect(turn).to_contain_text("Turn 1 · alpha")
    expect(turn).to_contain_text(f"{conversation_id}.t1")
    turn.get_by_role("button", name="Useful", exact=True).click()
    expect(turn.get_by_role("status")).to_have_text("Saved: useful")
    assert [line.verdict.useful for line in lines_of(bench_home, f"{conversation_id}.t1")] == [True]
    shot(page, "conversation-page")

    for width, height in ((1280, 800), (390, 844)):  # no sideways scroll on the new pages
        small, seen = new_page(browser, gateway, width, height)
        for path in ("/judge", panel_path, f"/conversations/{conversation_id}"):
            small.goto(path)
            small.wait_for_load_state("load")
            expect(small.locator(".answer.md").first).to_be_visible()
            assert small.evaluate(UNNAMED) == [], path  # every control named
            assert small.evaluate(NO_SIDEWAYS), (path, width, small.evaluate(
                "[document.documentElement.scrollWidth, document.documentElement.clientWidth]"))
            shot(small, f"{path.strip('/').split('/')[0]}-{width}")
        assert seen.errors == [], seen.errors
        small.context.close()
    assert watch.errors == [] and watch.hosts() == {urlsplit(gateway).netloc}, (watch.errors, watch.requests)
