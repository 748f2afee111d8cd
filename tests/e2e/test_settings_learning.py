"""Settings' Learning section in Chromium (issue 29, item 3): the user chooses where a scoped gateway
key's verdicts count, and turns automatic mode on, from the page; the form posts what the learning
settings take (a boolean for automatic mode) and the page shows the saved choice. No console error."""

from __future__ import annotations

import httpx
import pytest
from playwright.sync_api import Browser, expect

from tests.kits.browser import Watch, shot

pytestmark = pytest.mark.e2e


def test_the_settings_page_sets_where_scoped_keys_verdicts_count(browser: Browser, gateway: str) -> None:
    with httpx.Client(base_url=gateway, timeout=60) as api:
        assert api.get("/api/learning-settings").json()["scoped_verdicts"] == "own"
        context = browser.new_context(base_url=gateway)
        page = context.new_page()
        watch = Watch(page)
        page.goto("/settings")
        form = page.locator("#learning-form")
        expect(form.get_by_label("On its own collections' ratings only")).to_be_checked()
        expect(form.get_by_label("Off: I accept suggestions")).to_be_checked()

        form.get_by_label("Everywhere, like any verdict").check()
        form.get_by_label("On", exact=True).check()
        form.get_by_role("button", name="Save learning settings").click()
        expect(form.locator("[data-saved]")).to_have_text("Saved.")
        assert api.get("/api/learning-settings").json() == {
            "auto": True, "shadow": [], "explore": "ucb", "scoped_verdicts": "everywhere"}

        page.reload()
        expect(page.locator("#learning-form").get_by_label("Everywhere, like any verdict")).to_be_checked()
        shot(page, "settings-learning")
        assert watch.errors == []
        context.close()
