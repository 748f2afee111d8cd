"""Kept and forgotten on purpose (issue 30), on both backends: prompts, answers and turn texts are
kept for the retention the user sets (``bench settings retention``, ``/api/settings/retention``,
default 90 days), then pruned, exactly those older than it, with their claims, while verdicts,
statuses, usage and ratings stay; the housekeeping prunes at start and every few hours on the app's
clock; a route turn is judged on its own call id, its texts kept to judge it later."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import anyio
import httpx
import openai
import pytest

from benchwarmers_mcp.context import Access
from benchwarmers_mcp.engine.housekeeping import EVERY
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import Database, calls, ledger, panels, retention, routes, verdicts
from benchwarmers_mcp.store.calls import PanelRecord, SeatRecord
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.cli import Bench, bench  # noqa: F401 (the fixture)
from tests.kits.health import ManualClock, running_app
from tests.kits.judging import ask, seat_calls, seed_judging
from tests.kits.loopback import Loopback
from tests.kits.route import read, route_server, said, seed_members
from tests.kits.store import in_store

pytestmark = pytest.mark.backends
DAY = 86400.0


def store_panel(home: Path, panel: str) -> dict[str, Any]:
    return in_store(home, lambda db: panels.detail(db, panel, access=Access.unscoped()))


def test_retention_prunes_exactly_the_old_texts_and_keeps_verdicts_and_ratings(
        home: Path, upstream: str, fake: FakeUpstream, gateway: str, http: httpx.Client, net: Loopback,
        settings: Settings) -> None:
    seed_judging(home, upstream, fake)
    old = ask(http, gateway)
    new = ask(http, gateway, prompt="A later question.")
    verdict = {"call": seat_calls(old)["alpha"], "useful": False, "false": ["the SQL is injectable"]}
    assert http.post(gateway + "/bench/verdict", json=verdict).status_code == 200
    ratings = http.get(gateway + "/bench/ratings", params={"collection": "core"}).json()
    usage = read(home, ledger.in_order)
    at = {p: store_panel(home, p)["panel"]["at"] for p in (old["panel"], new["panel"])}
    assert at[old["panel"]] < at[new["panel"]]

    now = (at[old["panel"]] + at[new["panel"]]) / 2 + 90 * DAY  # the old panel 90 days and a moment ago
    pruned = in_store(home, lambda db: retention.prune(db, now=now))
    assert (pruned["days"], pruned["panels"], pruned["seats"]) == (90, 1, 3)

    gone, kept = store_panel(home, old["panel"]), store_panel(home, new["panel"])
    assert gone["panel"]["pruned_at"] == now and (gone["panel"]["prompt"], gone["panel"]["system"]) == ("", "")
    assert {s["answer"] for s in gone["seats"]} == {""}
    assert {s["status"] for s in gone["seats"]} == {"ok"}  # statuses, seconds and tokens stay
    assert kept["panel"]["pruned_at"] is None and kept["panel"]["prompt"] == "A later question."
    assert all(s["answer"] for s in kept["seats"])
    page = http.get(gateway + f"/bench/panels/{old['panel']}").json()
    assert page["claims"] == [] and page["panel"]["owed"] == 0  # nothing left to judge there
    assert http.get(gateway + f"/bench/panels/{new['panel']}").json()["claims"]
    # the verdict, its false claim, the ledger and the ratings are as they were
    assert http.post(gateway + "/bench/pending", json={"calls": list(seat_calls(old).values())}).json() == {
        "pending": []}
    lines = in_store(home, verdicts.log)
    assert [(v.verdict.call, v.verdict.false) for v in lines] == [(verdict["call"], ("the SQL is injectable",))]
    assert read(home, ledger.in_order) == usage
    assert http.get(gateway + "/bench/ratings", params={"collection": "core"}).json() == ratings
    # a second run prunes nothing more
    assert in_store(home, lambda db: retention.prune(db, now=now))["panels"] == 0


def test_the_retention_setting_through_the_api_and_the_cli(home: Path, upstream: str, fake: FakeUpstream,
                                                           gateway: str, http: httpx.Client,
                                                           bench: Bench) -> None:  # noqa: F811
    assert http.get(gateway + "/api/settings/retention").json() == {"days": 90, "default": 90}
    shown = bench(gateway, "settings", "retention")
    assert shown.returncode == 0 and "kept 90 days" in shown.stdout
    changed = bench(gateway, "settings", "retention", "--days", "30")
    assert changed.returncode == 0 and "kept 30 days" in changed.stdout, changed.stderr
    assert http.get(gateway + "/api/settings/retention").json()["days"] == 30
    refused = bench(gateway, "settings", "retention", "--days", "0")
    assert refused.returncode == 1 and "days" in refused.stderr
    assert http.post(gateway + "/api/settings/retention", json={"days": "7"}).status_code == 400
    assert bench(gateway, "settings", "gateway", "--days", "3").returncode == 2
    assert in_store(home, retention.retention_days) == 30


class Watched(ManualClock):
    """A hand-moved clock that says when a loop first sleeps for how long."""

    def __init__(self, start: float) -> None:
        super().__init__(start)
        self.naps: defaultdict[float, anyio.Event] = defaultdict(anyio.Event)

    async def sleep(self, seconds: float) -> None:
        self.naps[seconds].set()
        await super().sleep(seconds)


async def _panel(db: Database, at: float, prompt: str) -> str:
    record = PanelRecord(calls.new_panel_id(at), at, "bench/core", "general", "default", "all", "local", None,
                         prompt, [])
    await calls.create_panel(db, record)
    await calls.record_seat(db, SeatRecord(f"{record.id}.member1", record.id, "member1", "member 1", "alpha",
                                           "ok", 1.0, answer="- `a.py:1` is wrong.", at=at))
    return record.id


@pytest.mark.anyio
async def test_the_housekeeping_prunes_at_start_and_every_few_hours(settings: Settings) -> None:
    start = 1_900_000_000.0
    async with Database(settings.store_target) as db:
        first = await _panel(db, start - 91 * DAY, "asked long ago")
        second = await _panel(db, start - 90 * DAY + EVERY / 2, "asked a little later")
    clock = Watched(start)
    async with running_app(settings, clock) as app:
        with anyio.fail_after(60):
            await clock.naps[EVERY].wait()  # the first round, at start, is done
        assert [(await calls.panel(app.ctx.db, p)).prompt for p in (first, second)] == ["", "asked a little later"]
        await clock.advance(EVERY)  # the next round comes a few hours on
        assert (await calls.panel(app.ctx.db, second)).prompt == ""


def test_a_route_turn_is_judged_on_its_own_call_id_with_its_texts(home: Path, upstream: str, fake: FakeUpstream,
                                                                  settings: Settings, net: Loopback,
                                                                  http: httpx.Client, bench: Bench) -> None:  # noqa: F811
    seed_members(home, upstream, {"alpha": "alpha"}, {"agents": ["alpha"]}, max_output=4096, context_window=100_000)
    fake.script["alpha"] += [said("It is 21C in Paris."), said("Take an umbrella.")]
    with route_server(net, settings) as base:
        sdk = openai.OpenAI(http_client=net.client2(), base_url=base + "/v1", api_key="x", max_retries=0)
        talk = [{"role": "system", "content": "You are a weather agent."},
                {"role": "user", "content": "Weather in Paris?"}]
        first = sdk.chat.completions.create(model="bench/agents:route", messages=talk)
        talk += [{"role": "assistant", "content": "It is 21C in Paris."}, {"role": "user", "content": "Rain?"}]
        sdk.chat.completions.create(model="bench/agents:route", messages=talk)
        conversation = first.model_extra["bench"]["conversation"]
        shown = http.get(f"{base}/bench/conversations/{conversation}").json()
        assert shown["conversation"]["source"] == "gateway" and shown["conversation"]["client"].startswith("OpenAI/")
        turns = [(t["turn"], t["call"], t["prompt"], t["answer"], t["alias"]) for t in shown["turns"]]
        assert turns == [(1, f"{conversation}.t1", "Weather in Paris?", "It is 21C in Paris.", "alpha"),
                         (2, f"{conversation}.t2", "Rain?", "Take an umbrella.", "alpha")]
        judged = http.post(base + "/bench/verdict", json={"call": f"{conversation}.t2", "useful": True})
        assert judged.status_code == 200, judged.text
        again = http.get(f"{base}/bench/conversations/{conversation}").json()["turns"]
        assert [t["verdict"] and t["verdict"]["useful"] for t in again] == [None, True]
        cli = bench(base, "panel", "show", conversation)  # the CLI shows the conversation turn by turn
        assert cli.returncode == 0, cli.stderr
        assert f"route conversation {conversation} · bench/agents · 2 turn(s)" in cli.stdout
        turn2 = cli.stdout.split("── turn 2", 1)[1]
        assert f"alpha · {conversation}.t2 · ok" in turn2 and "useful" in turn2
        assert "  asked:\n    Rain?\n  answered:\n    Take an umbrella." in turn2
        rated = http.get(base + "/bench/ratings", params={"collection": "agents"}).json()["models"]
        assert rated[0]["evidence"]["route"]["good"] == 1  # the member's route evidence
        assert http.post(base + "/bench/verdict", json={"call": f"{conversation}.t9", "useful": True}).status_code == 404
        assert http.get(f"{base}/bench/conversations/r20000101-000000-abcd").status_code == 404
    # the turns' texts go with the retention too; the verdict stays
    pruned = in_store(home, lambda db: retention.prune(db, now=shown["turns"][1]["at"] + 91 * DAY))
    assert pruned["route_turns"] == 2
    rows = read(home, routes.turns_of, conversation)
    assert [(r["prompt"], r["answer"], r["status"]) for r in rows] == [("", "", "ok"), ("", "", "ok")]
