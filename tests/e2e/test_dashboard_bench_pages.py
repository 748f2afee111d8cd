"""Discover, Models and Benchmarks in a real browser (Debian's Chromium) against a real server:
the filter form narrows the rows; "Add" queues a catalog model for onboarding through
/api/discover/add and the row follows it live onto the bench; the model's facts open with their sources; the Benchmarks
page draws its plots (server-side SVG) beside their tables, the heat map's cells coloured. No
console error (a CSP refusal would be one), no request to any host but the server."""

from __future__ import annotations

import re
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from playwright.sync_api import Browser, expect

from tests.e2e.test_dashboard import MOST_BYTES, UNNAMED, WEIGH
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.browser import Watch, shot
from tests.suite.test_seed import make_repo

pytestmark = pytest.mark.e2e
KEY = "openai/gpt-4o-mini"


def suite_run(base: str, repo: Path) -> None:
    """Two scripted models asked a bug and its control planted in a small repository."""
    with httpx.Client(base_url=base, timeout=60) as api:
        assert api.post("/api/endpoint", json={"name": "sim", "api": "simulated"}).status_code == 201
        for alias, say in (("no-fault", "no-fault"), ("line-one", "line1")):
            reply = api.post("/api/model/register", json={"served": f"simulated/judge?say={say}", "endpoint": "sim",
                                                           "alias": alias})
            assert reply.status_code == 201, reply.text
        assert api.post("/api/suite/repos", json={"name": "app", "path": str(repo)}).status_code == 200
        created = api.post("/api/suite/seed", json={"repo": "app", "count": 2, "seed": 5}).json()["created"]
        bug = next(c for c in created if c["kind"] == "bug")
        for task in (bug["id"], bug["pair"]):
            assert api.post("/api/suite/promote", json={"id": task}).status_code == 200
        run = api.post("/api/suite/run", json={"models": ["no-fault", "line-one"], "tasks": [bug["id"], bug["pair"]],
                                               "gap": 0, "timeout": 5}).json()["run"]["id"]
        deadline = time.monotonic() + 120
        while api.get("/api/suite/run", params={"id": run}).json()["run"]["state"] == "running":
            assert time.monotonic() < deadline, "the suite run did not end"
            time.sleep(0.1)


def test_discover_add_facts_and_benchmarks(browser: Browser, fake: FakeUpstream, upstream: str, gateway: str,
                                           tmp_path: Path) -> None:
    fake.served = ["gpt-4o-mini"]
    with httpx.Client(base_url=gateway, timeout=60) as api:
        assert api.post("/api/endpoint", json={"name": "local", "base": upstream, "key": "sk-local-0123456789abc"}
                        ).status_code == 201
    suite_run(gateway, make_repo(tmp_path / "repo"))
    context = browser.new_context(base_url=gateway)
    page = context.new_page()
    watch = Watch(page)

    # Discover: the filter form is a plain GET: its filters land in the address and narrow the rows
    page.goto("/")
    page.get_by_role("navigation", name="Dashboard").get_by_role("link", name="Discover", exact=True).click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Discover")
    page.get_by_role("checkbox", name="Free").check()
    page.get_by_label("Provider").select_option("openai")
    page.get_by_role("button", name="Show").click()
    expect(page).to_have_url(re.compile(r"/discover\?.*free=1.*provider=openai"))
    rows = page.locator("#discover-table tbody tr")
    if rows.count():  # every row kept is free and openai's
        assert all(k.startswith("openai/") for k in rows.evaluate_all("rs => rs.map(r => r.dataset.key)"))
    page.get_by_role("link", name="Clear").click()
    page.get_by_role("searchbox", name="Search the catalog").fill("gpt-4o-mini")
    page.get_by_label("Provider").select_option("openai")
    page.get_by_role("button", name="Show").click()
    row = page.locator(f'tr[data-key="{KEY}"]')
    expect(row).to_be_visible()
    shot(page, "discover")

    # Add: to the onboarding queue through /api/discover/add; what happened is said, and the row
    # follows live (a change event) from the queue to "on the bench" with no reload
    row.locator("details.menu > summary").click()  # a row's actions are in its menu
    expect(row.get_by_label(f"Endpoint for {KEY}")).to_have_value("local")
    row.get_by_label(f"Onboarding for {KEY}").select_option("quick")
    page.evaluate("window.__kept = true")  # gone if the page reloaded
    row.get_by_role("button", name=f"Add {KEY}").click()
    expect(page.get_by_role("status").filter(has_text="Queued")).to_contain_text(f"on local, named (quick) from {KEY}")
    expect(page.locator(f'tr[data-key="{KEY}"]')).to_contain_text("on the bench as gpt-4o-mini")
    assert page.evaluate("window.__kept === true")

    # Models: the facts of it, each with its source
    page.get_by_role("navigation", name="Dashboard").get_by_role("link", name="Models", exact=True).click()
    page.locator('tr[data-alias="gpt-4o-mini"] details.menu > summary').click()  # its actions, in its menu
    page.get_by_role("button", name="Facts of gpt-4o-mini").click()
    dialog = page.get_by_role("dialog", name="Facts of gpt-4o-mini")
    expect(dialog).to_be_visible()
    window = dialog.locator('tr[data-fact="context_window"]')
    expect(window).to_contain_text("128,000")
    expect(window).to_contain_text("catalog")
    shot(page, "models-facts")
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog).to_be_hidden()

    # Benchmarks: the plots beside their tables, the heat map's cells coloured by class
    page.get_by_role("navigation", name="Dashboard").get_by_role("link", name="Benchmarks", exact=True).click()
    expect(page.get_by_role("table", name=re.compile("Recall and confidently wrong"))).to_be_visible()
    expect(page.locator("#trust svg circle")).to_have_count(2)
    assert page.locator("#trust svg").bounding_box()["width"] > 200  # drawn, at its size (the CSS loaded)
    expect(page.locator("#hunt svg rect.bar")).not_to_have_count(0)
    good = page.locator('#heat-table td.heat-4[data-alias="no-fault"]')
    expect(good).to_have_count(1)
    bad = page.locator('#heat-table td.heat-0[data-alias="no-fault"]').first
    colours = [c.evaluate("td => getComputedStyle(td).backgroundColor") for c in (good, bad)]
    assert colours[0] != colours[1] and "rgba(0, 0, 0, 0)" not in colours, colours
    shot(page, "benchmarks")

    # the roster's Suite column
    page.get_by_role("navigation", name="Dashboard").get_by_role("link", name="At a glance", exact=True).click()
    expect(page.get_by_role("meter", name="no-fault found 0 of 1 in the suite")).to_be_visible()

    for path in ("/discover", "/benchmarks", "/registered"):  # light, and every control named
        fresh = browser.new_context(base_url=gateway)
        one = fresh.new_page()
        one.goto(path)
        one.wait_for_load_state("load")
        weight = one.evaluate(WEIGH)[0]
        print(f"{path}: {weight / 1024:.1f} KB")
        assert weight < MOST_BYTES, (path, weight)
        assert one.evaluate(UNNAMED) == [], path
        fresh.close()

    assert watch.hosts() == {urlsplit(gateway).netloc}, watch.requests
    assert watch.errors == []
    context.close()
