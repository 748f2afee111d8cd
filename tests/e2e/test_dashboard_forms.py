"""Issue 37.6: the dashboard's client-side form handlers run in a real browser, not in a Python copy
of what they are meant to send: Quotas' "Set a limit" (``quotas.js`` ``limitBody``), Settings'
"Make a key" (``settings.js`` ``keyMade``, the key shown once) and a scheduler job's times
(``settings.js`` ``schedulerTimes``), each checked in the store through the admin API afterwards."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, expect

from tests.kits.browser import Watch
from tests.kits.servers import spawn_server
from tests.kits.waits import ANSWER

pytestmark = pytest.mark.e2e


def posted(path: str):
    return lambda response: response.url.endswith(path) and response.request.method == "POST"


def test_set_a_limit_make_a_key_and_a_jobs_times_in_a_browser(browser: Browser, home: Path) -> None:
    with spawn_server(home) as base, httpx.Client(base_url=base, timeout=ANSWER) as api:
        assert api.post("/api/endpoint", json={"name": "sim", "api": "simulated"}).status_code == 201
        alias = api.post("/api/model/register", json={"served": "simulated/sage", "endpoint": "sim"}).json()[
            "model"]["alias"]
        context = browser.new_context(base_url=base)
        page = context.new_page()
        watch = Watch(page)

        # Quotas: the picker's "model:<alias>" and the limit's name become {"model": alias, "rpm": 7}
        page.goto("/quotas")
        page.locator("#limit-for").select_option(f"model:{alias}")
        page.locator("#limit-name").select_option("rpm")
        page.locator("#limit-value").fill("7")
        with page.expect_response(posted("/api/limits")) as sent:
            page.get_by_role("button", name="Set limit").click()
        assert sent.value.status == 200, sent.value.text()
        limits = api.get("/api/limits").json()["limits"]
        assert [(i["scope"], i["subject"], i["name"], i["value"]) for i in limits] == [("model", alias, "rpm", 7)]

        # Settings: a new gateway key is shown once, and the key exists
        page.goto("/settings")
        page.locator("#key-name").fill("forms-test")
        page.get_by_role("button", name="Make key").click()
        shown = page.locator("#new-key-value")
        expect(page.locator("#new-key-shown")).to_be_visible()
        key = shown.text_content() or ""
        assert len(key) >= 20
        assert api.get("/v1/models", headers={"authorization": f"Bearer {key}"}).status_code == 200

        # Settings: a job's times go to the scheduler as {"times": {job: "HH:MM"}}
        jobs = api.get("/api/scheduler").json()["jobs"]
        job = jobs[0]["name"]
        page.locator(f"#job-at-{job}").fill("03:15")
        with page.expect_response(posted("/api/scheduler")) as sent:
            page.get_by_role("button", name=f"Set times of {job}").click()
        assert sent.value.status == 200, sent.value.text()
        after = {j["name"]: j for j in api.get("/api/scheduler").json()["jobs"]}
        assert after[job]["schedule"] == "03:15", after[job]
        assert not watch.errors, watch.errors
