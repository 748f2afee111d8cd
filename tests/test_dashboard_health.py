"""The dashboard's health parts over HTTP: "Action needed" above every page (open alerts with their
buttons, "retired automatically this week" with Restore), each button a form that posts to the
admin route it names, pressed here as the browser would; the Health page (status, probe history,
the 14-day outcome table beside its chart, speed); the scheduler on Settings; the onboarding chip
(progress, Details, Stop, Clear); and the live feed hearing an alert refreshed, dismissed or
cleared (an UPDATE), a probe, an onboarding step and a scheduler run."""

from __future__ import annotations

import html as htmllib
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import Database
from benchwarmers_mcp.store import alerts as alert_store
from benchwarmers_mcp.store import events as event_store
from benchwarmers_mcp.store import health as health_store
from benchwarmers_mcp.store import models as model_store
from benchwarmers_mcp.store import onboarding as queue
from benchwarmers_mcp.store import scheduler as scheduler_store
from benchwarmers_mcp.store.health import ProbeRow
from benchwarmers_mcp.web import action_needed
from benchwarmers_mcp.web.action_needed import Item, source
from tests.kits.store import in_store
from tests.kits.store import target as store_target


def bench(api: httpx.Client, *served: str) -> list[str]:
    assert api.post("/api/endpoint", json={"name": "sim", "api": "simulated"}).status_code == 201
    aliases = [api.post("/api/model/register", json={"served": s, "endpoint": "sim"}).json()["model"]["alias"]
               for s in served]
    assert api.post("/api/collection", json={"name": "core", "members": aliases}).status_code == 201
    return aliases


def banner(page: str) -> str:
    """The "Action needed" region of a page ('' when it is empty)."""
    found = re.search(r'<div id="action-needed" data-region>(.*?)</div>\s*<p class="action-result"', page, re.S)
    assert found, "every page has the Action needed region"
    return found.group(1)


def chip(page: str) -> str:
    found = re.search(r'<div id="onboarding-chip" class="onboarding-chip" data-region>(.*?)</div>\s*(?:<p class="live"|</header>)',
                      page, re.S)
    assert found, "every page has the onboarding chip's region"
    return found.group(1)


def forms(fragment: str) -> list[dict[str, Any]]:
    """Each form posting to the admin API: its path, the button's text and the JSON the dashboard's
    script would send (hidden fields, typed by data-type as app.js casts them)."""
    out = []
    for attrs, inner in re.findall(r"<form ([^>]*data-api=[^>]*)>(.*?)</form>", fragment, re.S):
        body: dict[str, Any] = {}
        for field in re.findall(r'<input type="hidden"([^>]*)>', inner):
            name = re.search(r'name="([^"]+)"', field).group(1)  # type: ignore[union-attr]
            value = htmllib.unescape(re.search(r'value="([^"]*)"', field).group(1))  # type: ignore[union-attr]
            kind = re.search(r'data-type="([^"]+)"', field)
            cast = kind.group(1) if kind else ""
            body[name] = int(value) if cast == "int" else value == "true" if cast == "bool" else \
                [v.strip() for v in value.split(",") if v.strip()] if cast == "csv" else value
        label = re.sub(r"<[^>]+>", "", re.findall(r"<button[^>]*>(.*?)</button>", inner, re.S)[-1]).strip()
        out.append({"path": re.search(r'data-api="([^"]+)"', attrs).group(1),  # type: ignore[union-attr]
                    "label": label, "body": body, "confirm": "data-confirm=" in attrs})
    return out


def press(api: httpx.Client, fragment: str, label: str, **extra: Any) -> httpx.Response:
    """Post the form whose button reads ``label``, as the browser does (same origin)."""
    chosen = [f for f in forms(fragment) if f["label"] == label]
    assert chosen, (label, [f["label"] for f in forms(fragment)])
    return api.post(chosen[0]["path"], json={**chosen[0]["body"], **extra},
                    headers={"Origin": str(api.base_url).rstrip("/")})


def test_action_needed_is_above_every_page_with_each_alerts_buttons(api: httpx.Client, settings: Settings) -> None:
    [gone, sage] = bench(api, "simulated/gone?fail=404", "simulated/sage")
    assert banner(api.get("/").text).strip() == ""  # nothing needs doing: the region is there, empty
    assert api.post("/api/probe", json={"alias": gone}).json()["answered"] is False  # a 404 raises model_gone
    in_store(settings, lambda db: alert_store.raise_went_paid(db, sage, price_in=0.5, price_out=1.5))
    for path in ("/", "/logs", "/settings", "/health-checks", "/collections"):
        shown = banner(api.get(path).text)
        assert "Action needed" in shown, path
        assert f"<strong>{gone}</strong>" in shown and f"<strong>{sage}</strong>" in shown and "$0.5 / $1.5" in shown
    shown = banner(api.get("/logs").text)
    labels = {(f["path"], f["label"]) for f in forms(shown)}
    assert {("/api/model/retry", "Retry now"), ("/api/model/retire", "Retire"), ("/api/model", "Mark ad hoc"),
            ("/api/alerts/dismiss", "Dismiss")} <= labels
    retire = [f for f in forms(shown) if f["label"] == "Retire"]
    assert all(f["confirm"] for f in retire)  # destructive: asked first
    ad_hoc = [f for f in forms(shown) if f["label"] == "Mark ad hoc"][0]
    assert ad_hoc["body"] == {"alias": sage, "ad_hoc": True}  # typed as the admin API wants it

    # the buttons are the admin API's own actions: pressing them does what they say
    assert press(api, shown, "Mark ad hoc").status_code == 200
    assert model_store_get(settings, sage).ad_hoc is True
    went_paid = [a for a in api.get("/api/alerts").json()["alerts"] if a["kind"] == "went_paid"][0]
    dismiss = [f for f in forms(shown) if f["label"] == "Dismiss" and f["body"] == {"id": went_paid["id"]}]
    assert api.post("/api/alerts/dismiss", json=dismiss[0]["body"]).json()["changed"] is True
    retry = press(api, shown, "Retry now")
    assert retry.status_code == 200 and retry.json()["answered"] is False
    after = banner(api.get("/").text)
    assert f"<strong>{sage}</strong>" not in after and f"<strong>{gone}</strong>" in after


def model_store_get(settings: Settings, alias: str) -> model_store.ModelRecord:
    return in_store(settings, lambda db: model_store.get(db, alias))  # type: ignore[no-any-return]


def test_retired_this_week_offers_restore_and_dismiss(api: httpx.Client, settings: Settings) -> None:
    [alpha, beta] = bench(api, "simulated/alpha", "simulated/beta")

    async def retire(db: Database) -> None:
        await model_store.retire(db, alpha, "no answer on 3 days", by="auto", rule="failing", leave_collections=True)
        await alert_store.raise_one(db, "retired", alpha, f"{alpha} was retired automatically: no answer on 3 days")
        await model_store.retire(db, beta, "by hand")  # by the user: not "retired automatically"
    in_store(settings, retire)
    shown = banner(api.get("/registered").text)
    assert "Retired automatically this week" in shown
    assert shown.count(f"<strong>{alpha}</strong>") == 1  # its "retired" alert is this item, not a second line
    assert f"<strong>{beta}</strong>" not in shown
    assert {f["label"] for f in forms(shown)} == {"Restore", "Dismiss"}
    restored = press(api, shown, "Restore")
    assert restored.status_code == 200, restored.text
    assert not model_store_get(settings, alpha).retired
    assert alpha in [m for c in api.get("/api/collections").json()["collections"] for m in c["members"]]
    assert banner(api.get("/").text).strip() == ""


def test_the_health_page_shows_status_history_outcomes_and_speed(api: httpx.Client) -> None:
    [sage, gone] = bench(api, "simulated/sage", "simulated/gone?fail=500")
    for alias in (sage, gone):
        api.post("/api/probe", json={"alias": alias})
    assert api.post("/api/probe", json={"alias": sage, "kind": "speed"}).json()["answered"] is True
    page = api.get("/health-checks")
    assert page.status_code == 200 and "<h1>Health</h1>" in page.text
    status = re.search(r'<table id="health-status">(.*?)</table>', page.text, re.S).group(1)  # type: ignore[union-attr]
    row = {a: re.search(rf'<tr data-alias="{a}">(.*?)</tr>', status, re.S).group(1) for a in (sage, gone)}  # type: ignore[union-attr]
    assert re.search(r'chip ok"[^>]*>healthy<', row[sage]) and re.search(r'chip err"[^>]*>failing<', row[gone])
    assert "upstream 500" in row[gone] and 'chip err">other<' in row[gone]
    assert f"Probe {sage} now" in row[sage]
    # 14 days in the table beside the chart, today's row counting every probe call
    outcomes = re.search(r'<table id="outcomes-table" data-chart-table>(.*?)</table>', page.text, re.S).group(1)  # type: ignore[union-attr]
    days = re.findall(r'<tr data-x="(\d+)"><th scope="row">([\d-]+)</th><td class="num" data-value="(\d+)">'
                      r'\d+</td><td class="num" data-value="(\d+)">', outcomes)
    assert len(days) == 14 and [int(d[0]) for d in days] == sorted((int(d[0]) for d in days), reverse=True)
    health = api.get("/api/health").json()["models"]
    answered = sum(d["answered"] for m in health for d in m["days"] if d["date"] == days[0][1])
    failed = sum(d["failed"] for m in health for d in m["days"] if d["date"] == days[0][1])
    assert (int(days[0][2]), int(days[0][3])) == (answered, failed) and answered >= 7 and failed >= 1
    assert 'data-chart-for="outcomes-table" data-chart="days"' in page.text and "uPlot.iife.min.js" in page.text
    speed = re.search(r'<table id="speed-table">(.*?)</table>', page.text, re.S).group(1)  # type: ignore[union-attr]
    assert speed.count(f"<th scope=\"row\">{sage}</th>") == 2 and "large" in speed and "tiny" in speed
    history = re.search(r'<table id="probe-history">(.*?)</table>', page.text, re.S).group(1)  # type: ignore[union-attr]
    assert history.count("<tr data-search=") == 4  # availability x2, speed tiny and large
    # Probe now is a form on the admin route
    assert press(api, status, f"Probe {sage} now").json()["answered"] is True
    assert api.get("/health-checks").text.count('<tr data-search="') == 5


def test_settings_runs_the_scheduler_over_its_admin_routes(api: httpx.Client) -> None:
    page = api.get("/settings").text
    region = re.search(r'<div id="scheduler-region" data-region>(.*)</section>\s*<section class="card" aria-labelledby="access-h">',
                       page, re.S).group(1)  # type: ignore[union-attr]
    assert re.search(r'value="off" checked', region)  # a fresh install: off
    jobs = api.get("/api/scheduler").json()["jobs"]
    for job in jobs:
        assert f'<tr data-job="{job["name"]}">' in region and f"Run {job['name']} now" in region
    assert "none: the scheduler is off" in region  # no next run while it is off
    assert 'chip ok">on<' not in region, "a job reads off while the scheduler is off"
    assert api.post("/api/scheduler", json={"mode": "log-only"}).status_code == 200
    region = api.get("/settings").text
    assert re.search(r'value="log-only" checked', region)
    availability = re.search(r'<tr data-job="availability">(.*?)</tr>', region, re.S).group(1)  # type: ignore[union-attr]
    assert "05:00" in availability and "in " in availability  # its next run, and how soon
    # switch a job off, set its times (the shape settings.js gives the body), run one now
    assert press(api, availability, "Switch off availability").json()["jobs"][0]["on"] is False
    assert api.post("/api/scheduler", json={"times": {"perf": "tue 06:30"}}).status_code == 200
    ran = press(api, availability, "Run availability now")
    assert ran.status_code == 202 and ran.json()["status"] == "running"
    def last_run() -> Any:
        return {j["name"]: j["last_run"] for j in api.get("/api/scheduler").json()["jobs"]}["availability"]
    until(lambda: bool(last_run()) and last_run()["status"] != "running")
    last = last_run()
    page = api.get("/settings").text
    row = re.search(r'<tr data-job="availability">(.*?)</tr>', page, re.S).group(1)  # type: ignore[union-attr]
    assert f'>{last["status"]}</span>' in row and "Switch on availability" in row
    perf = re.search(r'<tr data-job="perf">(.*?)</tr>', page, re.S).group(1)  # type: ignore[union-attr]
    assert 'value="tue 06:30"' in perf and "default mon 07:00" in perf
    runs = re.search(r'<table id="scheduler-runs"(.*?)</table>', page, re.S).group(1)  # type: ignore[union-attr]
    assert '<th scope="row">availability</th>' in runs


def until(done: Callable[[], bool], seconds: float = 60.0) -> None:
    """Wait for ``done`` (the server works in its own loop); a bound, not a timed assertion."""
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, "the server never got there"
        time.sleep(0.05)


def test_the_onboarding_chip_shows_progress_with_details_stop_and_clear(api: httpx.Client, settings: Settings) -> None:
    bench(api, "simulated/sage")
    assert chip(api.get("/").text).strip() == ""

    async def queued(db: Database) -> list[int]:  # straight into the store: nothing wakes the worker
        return await queue.enqueue(db, "b1", [queue.Wanted("simulated/quill", "sim"),
                                              queue.Wanted("simulated/lark", "sim", "quick")], time.time())
    in_store(settings, queued)
    shown = chip(api.get("/logs").text)
    assert "Onboarding: 0 of 2 finished" in shown and 'max="2" value="0"' in shown
    assert 'data-open="onboarding-details"' in shown and "simulated/quill" in shown and "simulated/lark" in shown
    assert {f["label"] for f in forms(shown)} == {"Stop"}
    stopped = press(api, shown, "Stop").json()
    assert stopped["skipped"] == 2
    shown = chip(api.get("/logs").text)
    assert "Onboarding: 2 of 2 finished" in shown and {f["label"] for f in forms(shown)} == {"Clear"}
    assert press(api, shown, "Clear").json()["cleared"] == 2
    assert chip(api.get("/").text).strip() == ""


def test_onboarding_through_the_queue_shows_its_steps_in_details(api: httpx.Client) -> None:
    bench(api, "simulated/sage")
    item = api.post("/api/onboarding", json={"items": [{"served": "simulated/quill?latency=0.8", "endpoint": "sim",
                                                         "mode": "quick"}]}).json()["queued"][0]
    until(lambda: api.get("/api/onboarding").json()["items"][0]["state"] not in ("queued", "running"))
    shown = chip(api.get("/").text)
    assert f'<tr data-item="{item}">' in shown and "Onboarding: 1 of 1 finished" in shown
    assert "[1/5] served: ok" in shown and "[4/5] probe: ok · answered" in shown


@pytest.mark.anyio
async def test_an_alert_changed_by_an_update_is_an_event_and_counts_stay_exact(home: Path) -> None:
    async with Database(store_target(home)) as db:
        start = await event_store.head(db)
        first = await alert_store.raise_one(db, "retiring", "m1", "m1 retires in 3 days", {"days": 3}, 100.0)
        await alert_store.raise_one(db, "retiring", "m1", "m1 retires in 2 days", {"days": 2}, 200.0)  # refreshed
        assert await alert_store.dismiss(db, first, 300.0) is True
        assert await alert_store.clear_one(db, "retiring", "m1", "it answered", 400.0) == 1  # one row, not its event too
        assert await alert_store.clear_one(db, "retiring", "m1", "again", 500.0) == 0
        got = [(e.kind, e.subject, e.ref, e.at) for e in await event_store.after(db, start)]
        assert got == [("alert", "m1", "retiring", 100.0), ("alert", "m1", "retiring", 200.0),
                       ("alert", "m1", "retiring", 300.0), ("alert", "m1", "retiring", 400.0)]

        mark = await event_store.head(db)
        await health_store.add_probe(db, ProbeRow(600.0, "m1", "c", "availability", "ready", 1, answered=1))
        [item] = await queue.enqueue(db, "b", [queue.Wanted("a/b", "sim")], 700.0)
        await queue.start(db, item, 710.0)
        assert (await queue.stop(db, 720.0))["stopping"] == 1
        claim = await scheduler_store.claim(db, "availability", owner="me", now=800.0, due=None, stale=60.0,
                                            trigger="now")
        assert claim.run is not None
        await scheduler_store.finish(db, "availability", claim.run, now=810.0, status="ran")
        got = [(e.kind, e.ref) for e in await event_store.after(db, mark)]
        assert got == [("probe", "availability"), ("onboarding", "queued"), ("onboarding", "running"),
                       ("onboarding", "running"), ("scheduler", "running"), ("scheduler", "ran")]


def test_a_source_joins_action_needed_with_one_function(api: httpx.Client) -> None:
    """What a later "suggestions" source does: one decorated function, and its items (with an
    Accept button posting to its route) show above every page."""
    before = list(action_needed.SOURCES)  # the real sources (the ratings' suggestions among them) stay
    try:
        @source("suggestions", "Suggestions", live={"verdict"})
        async def suggestions(view: Any) -> list[Item]:
            return [Item("suggestion", "sage", "seat sage in bench/core: it helped 9 of 10",
                         buttons=(action_needed.Button("Accept", "/api/collection", {"name": "core"}),))]
        shown = banner(api.get("/quotas").text)
        assert "Suggestions" in shown and "seat sage in bench/core" in shown
        assert {(f["path"], f["label"]) for f in forms(shown)} == {("/api/collection", "Accept")}
        assert "verdict" in api.get("/quotas").text.split('data-live="', 1)[1].split('"', 1)[0].split()
    finally:
        action_needed.SOURCES[:] = before
    with pytest.raises(ValueError, match="event kinds"):
        source("weather", live={"rain"})
