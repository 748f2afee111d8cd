"""The dashboard's health parts in Chromium against a real server process: "Action needed" appears
on an alert raised by a probe, its Dismiss button works, and an alert raised then cleared by
another connection on the data folder (an UPDATE: no insert) comes and goes without a reload; the
Health page draws its chart; Settings switches the scheduler to log-only and runs a job now; the
onboarding chip follows a model through the queue, with Details and Clear. No console error."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, expect

from benchwarmers_mcp.store import alerts as alert_store
from tests.kits.browser import Watch, shot
from tests.kits.servers import spawn_server
from tests.kits.store import in_store

pytestmark = pytest.mark.e2e


def test_action_needed_health_scheduler_and_the_chip_in_a_browser(browser: Browser, home: Path) -> None:
    with spawn_server(home) as base, httpx.Client(base_url=base, timeout=60) as api:
        assert api.post("/api/endpoint", json={"name": "sim", "api": "simulated"}).status_code == 201
        gone, sage = (api.post("/api/model/register", json={"served": s, "endpoint": "sim"}).json()["model"]["alias"]
                      for s in ("simulated/gone?fail=404", "simulated/sage"))
        context = browser.new_context(base_url=base)
        page = context.new_page()
        watch = Watch(page)
        page.goto("/logs")
        expect(page.locator("#live-status")).to_have_text("Live")
        banner = page.locator("#action-needed")
        expect(banner).to_be_empty()

        # a probe's 404 raises an alert: the banner shows it live, with its buttons
        assert api.post("/api/probe", json={"alias": gone}).json()["answered"] is False
        item = banner.locator("li").filter(has_text=gone)
        expect(item).to_be_visible()
        expect(item.get_by_role("button", name="Retry now")).to_be_visible()
        shot(page, "action-needed")
        item.get_by_role("button", name="Dismiss").click()
        expect(item).to_have_count(0)
        expect(page.locator("#action-result")).to_contain_text("Dismiss: done")

        # raised and then cleared by another writer: the clearing UPDATE is heard too
        in_store(home, lambda db: alert_store.raise_went_paid(db, sage, price_in=1.0))
        paid = banner.locator("li").filter(has_text="went paid")
        expect(paid).to_be_visible()
        in_store(home, lambda db: alert_store.clear_went_paid(db, sage))
        expect(paid).to_have_count(0)

        # Health: the chart beside its table
        page.goto("/health-checks")
        expect(page.locator("#outcomes-region figure .uplot")).to_have_count(1)
        expect(page.locator("#health-status tr", has_text=gone)).to_contain_text("gone")  # its 404: the one status
        page.get_by_role("button", name=f"Probe {sage} now").click()
        expect(page.locator("#action-result")).to_contain_text("it answered")
        expect(page.locator("#health-status tr", has_text=sage)).to_contain_text("healthy")
        shot(page, "health")

        # Settings: the scheduler's mode, and a job run now
        page.goto("/settings")
        page.get_by_label("Log only").check()
        page.get_by_role("button", name="Save mode").click()
        # the region drawn again from the saved mode ("on since" shows for a mode other than off;
        # a job's row alone cannot tell: "every 30 min " already contains "in ")
        expect(page.locator("#scheduler-mode")).to_contain_text("on since")
        expect(page.locator("tr[data-job='availability']")).to_contain_text("in ")  # a next run now
        assert api.get("/api/scheduler").json()["mode"] == "log-only"
        page.get_by_role("button", name="Run availability now").click()
        expect(page.locator("#action-result")).to_contain_text("started")
        expect(page.locator("#scheduler-runs")).to_contain_text("availability")
        shot(page, "settings-scheduler")

        # the onboarding chip follows the queue
        queued = api.post("/api/onboarding", json={"items": [{"served": "simulated/quill?latency=0.8",
                                                               "endpoint": "sim", "mode": "quick"}]})
        assert queued.status_code == 202
        chip = page.locator("#onboarding-chip")
        expect(chip).to_contain_text("1 of 1 finished")
        chip.get_by_role("button", name="Details").click()
        expect(page.locator("#onboarding-details")).to_contain_text("[4/5] probe: ok")
        shot(page, "onboarding-details")
        page.locator("#onboarding-details").get_by_role("button", name="Cancel").click()
        chip.get_by_role("button", name="Clear").click()
        expect(chip).to_be_empty()
        assert watch.errors == []
        context.close()
