"""The dashboard's ratings in Chromium against a real server process: a suggestion a review raised
(another connection on the data folder) appears in "Action needed" without a reload, with its
evidence; Accept changes the collection, live on the Collections roster, whose Rating column shows
each member's mean and interval; the Ratings page draws its interval bars beside the table and
filters by collection and shape. No console error."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from benchwarmers_mcp.engine import learning
from benchwarmers_mcp.store import Database
from benchwarmers_mcp.store import collections as collection_store
from tests.kits.browser import Watch, shot
from tests.kits.servers import spawn_server
from tests.kits.store import in_store
from tests.ratings.kit import bench as make_bench
from tests.ratings.kit import judge

pytestmark = pytest.mark.e2e


async def known_verdicts(db: Database) -> None:
    await make_bench(db, ["a", "b", "x", "y"], {"core": ["a", "b"]})
    await judge(db, "a", 2, 8, label="member")
    await judge(db, "b", 9, 1, label="member")
    await judge(db, "x", 8, 1)


async def review(db: Database) -> None:
    await learning.review(db, await collection_store.get(db, "core"))


def test_suggestions_and_ratings_in_a_browser(browser: Browser, home: Path) -> None:
    with spawn_server(home) as base:
        in_store(home, known_verdicts)
        context = browser.new_context(base_url=base)
        page = context.new_page()
        watch = Watch(page)
        page.goto("/collections")
        expect(page.locator("#live-status")).to_have_text("Live")
        core = page.locator("section[aria-labelledby='c-core-h']")
        weak = core.locator("tbody tr").filter(has=page.get_by_role("rowheader", name="a", exact=True))
        expect(weak.locator("td.rating-cell")).to_contain_text("29%")
        banner = page.locator("#action-needed")
        expect(banner).to_be_empty()

        # a review elsewhere raises a suggestion: heard live, with its evidence and Accept
        in_store(home, review)
        item = banner.locator("li").filter(has_text="promote into bench/core in place of a")
        expect(item).to_be_visible()
        expect(item).to_contain_text("x 77% useful")
        shot(page, "action-needed-suggestion")
        item.get_by_role("button", name="Accept").click()
        expect(item).to_have_count(0)
        expect(page.locator("#action-result")).to_contain_text("Accept")
        expect(core.get_by_role("rowheader", name="x", exact=True)).to_have_count(1)  # the roster follows, no reload
        expect(core.get_by_role("rowheader", name="a", exact=True)).to_have_count(0)
        assert in_store(home, lambda db: collection_store.get(db, "core")).members == ("x", "b")

        # the Ratings page: the chart beside the table; the filter picks collection and shape
        page.get_by_role("link", name="Ratings of core").click()
        expect(page).to_have_url(f"{base}/ratings?collection=core")
        expect(page.locator("svg.rating-chart g.rating")).to_have_count(4)
        expect(page.locator("svg.rating-chart g.member")).to_have_count(2)
        expect(page.locator("#ratings-table tbody tr").first).to_contain_text("member")
        expect(page.locator("#ratings-table tr[data-alias='y']")).to_contain_text("unrated")
        shot(page, "ratings")
        page.get_by_label("Shape", exact=True).select_option("review")
        page.get_by_role("button", name="Show").click()
        expect(page).to_have_url(f"{base}/ratings?collection=core&shape=review")
        expect(page.locator("#ratings-h")).to_contain_text("shape review")
        assert watch.errors == []
        context.close()
