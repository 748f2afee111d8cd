"""Issue 16.5: onboarding through a queue in the store: the reference's steps, "did you mean",
stopping with the reason when a model does not answer, a batch refused whole, stop and clear,
and a queue (with a running item) that survives a restart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from benchwarmers_mcp.store import endpoints, models
from benchwarmers_mcp.store.endpoints import Endpoint
from tests.fakes.openai_upstream import FakeUpstream
from tests.health_kit import ManualClock, running_app, settings_for
from tests.servers import serve_in_thread

pytestmark = pytest.mark.anyio


@pytest.fixture
def fake_base(fake: FakeUpstream):
    fake.served = ["alpha", "bad?fail=500", "slow?latency=2", "beta"]
    with serve_in_thread(fake.app()) as base:
        yield base + "/v1"


async def add_endpoint(app, base: str) -> None:
    await endpoints.add(app.state.scheduler.ctx.db, Endpoint("fake", base))


async def queue_of(client: httpx.AsyncClient) -> dict[str, Any]:
    return (await client.get("/api/onboarding")).json()


async def until(client: httpx.AsyncClient, ready) -> dict[str, Any]:
    with anyio.fail_after(30):
        while True:
            state = await queue_of(client)
            if ready(state["items"]):
                return state
            await anyio.sleep(0.05)


def all_finished(items: list[dict[str, Any]]) -> bool:
    return bool(items) and all(i["state"] not in ("queued", "running") for i in items)


async def test_a_model_is_brought_on_step_by_step(home: Path, fake: FakeUpstream, fake_base: str) -> None:
    async with running_app(settings_for(home), ManualClock()) as (app, client):
        await add_endpoint(app, fake_base)
        queued = await client.post("/api/onboarding", json={"items": [{"served": "alpha", "endpoint": "fake"}]})
        assert queued.status_code == 202
        [item] = (await until(client, all_finished))["items"]
        model = await models.get(app.state.scheduler.ctx.db, "alpha")
    assert item["state"] == "done" and item["alias"] == "alpha"
    assert [(e["step"], e["name"], e["state"]) for e in item["log"]] == [
        (1, "served", "ok"), (2, "alias", "ok"), (3, "register", "ok"), (4, "probe", "ok"), (5, "suite", "skipped")]
    assert item["log"][4]["message"] == "suite not installed"
    assert not model.retired and not model.ad_hoc
    assert fake.count("alpha") == 4  # the onboarding probe: 2 tiny, 2 large, capped
    assert {c.body.get("max_tokens") for c in fake.calls} == {16, 48}


async def test_a_name_not_served_says_what_is_close(home: Path, fake_base: str) -> None:
    async with running_app(settings_for(home), ManualClock()) as (app, client):
        await add_endpoint(app, fake_base)
        await client.post("/api/onboarding", json={"items": [{"served": "alpah", "endpoint": "fake"}]})
        [item] = (await until(client, all_finished))["items"]
        assert await models.find(app.state.scheduler.ctx.db, "alpah") is None
    assert item["state"] == "failed" and "did you mean alpha" in item["reason"]


async def test_no_answer_stops_with_the_reason_and_keeps_it_registered(home: Path, fake_base: str) -> None:
    async with running_app(settings_for(home), ManualClock()) as (app, client):
        await add_endpoint(app, fake_base)
        await client.post("/api/onboarding", json={"items": [{"served": "bad?fail=500@fake", "mode": "quick"}]})
        [item] = (await until(client, all_finished))["items"]
        model = await models.get(app.state.scheduler.ctx.db, item["alias"])
    assert item["state"] == "no answer" and "other" in item["reason"] and "500" in item["reason"]
    assert [e["name"] for e in item["log"]][-1] == "probe" and not model.retired


async def test_ad_hoc_is_registered_and_never_probed(home: Path, fake: FakeUpstream, fake_base: str) -> None:
    async with running_app(settings_for(home), ManualClock()) as (app, client):
        await add_endpoint(app, fake_base)
        await client.post("/api/onboarding", json={"items": [{"served": "beta", "endpoint": "fake",
                                                               "mode": "quick-adhoc"}]})
        [item] = (await until(client, all_finished))["items"]
        model = await models.get(app.state.scheduler.ctx.db, "beta")
    assert item["state"] == "done" and model.ad_hoc and fake.count() == 0


async def test_a_batch_with_one_bad_item_is_refused_whole(home: Path, fake_base: str) -> None:
    async with running_app(settings_for(home), ManualClock()) as (app, client):
        await add_endpoint(app, fake_base)
        refused = await client.post("/api/onboarding", json={"items": [
            {"served": "alpha", "endpoint": "fake"}, {"served": "beta", "endpoint": "nowhere"},
            {"served": "alpha", "endpoint": "fake"}]})
        message = refused.json()["error"]["message"]
        assert refused.status_code == 400 and "nothing was queued" in message
        assert "item 2 (beta): no endpoint named 'nowhere'" in message and "item 3 (alpha): already queued" in message
        assert (await queue_of(client))["items"] == []


async def test_stop_skips_the_queue_and_clear_hides_what_finished(home: Path, fake_base: str) -> None:
    async with running_app(settings_for(home), ManualClock()) as (app, client):
        await add_endpoint(app, fake_base)
        await client.post("/api/onboarding", json={"items": [{"served": s, "endpoint": "fake", "mode": "quick"}
                                                              for s in ("slow?latency=2", "alpha", "beta")]})
        await until(client, lambda items: items[0]["state"] == "running" and items[0]["step"] >= 3)
        stopped = (await client.post("/api/onboarding/stop", json={})).json()
        assert stopped["skipped"] == 2 and stopped["stopping"] == 1
        items = (await until(client, all_finished))["items"]
        assert [i["state"] for i in items] == ["skipped", "skipped", "skipped"]
        assert items[0]["reason"].startswith("stopped after step") and items[1]["reason"] == "stopped"
        cleared = (await client.post("/api/onboarding/clear", json={})).json()
        assert cleared["cleared"] == 3 and cleared["items"] == []


async def test_the_queue_and_its_running_item_survive_a_restart(home: Path, fake: FakeUpstream,
                                                                 fake_base: str) -> None:
    settings, clock = settings_for(home), ManualClock()
    async with running_app(settings, clock) as (app, client):
        await add_endpoint(app, fake_base)
        await client.post("/api/onboarding", json={"items": [{"served": s, "endpoint": "fake", "mode": "quick"}
                                                              for s in ("slow?latency=2", "alpha")]})
        before = await until(client, lambda items: items[0]["state"] == "running" and items[0]["step"] >= 3)
    assert [i["state"] for i in before["items"]] == ["running", "queued"]
    async with running_app(settings, clock) as (app, client):
        items = (await until(client, all_finished))["items"]
        registered = [m.alias for m in await models.list_all(app.state.scheduler.ctx.db)]
    assert [i["state"] for i in items] == ["done", "done"]
    assert [e["name"] for e in items[0]["log"]] == ["served", "alias", "register", "probe", "suite"]
    assert sorted(registered) == ["alpha", "slow-latency-2"]
