"""Issue 16.5: onboarding through a queue in the store: the reference's steps, "did you mean",
stopping with the reason when a model does not answer, a batch refused whole, stop and clear,
and a queue (with a running item) that survives a restart."""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import pytest

from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import endpoints, models
from benchwarmers_mcp.store import suite as suite_store
from benchwarmers_mcp.store.endpoints import Endpoint
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.health import ManualClock, Running, running_app
from tests.kits.loopback import Loopback

pytestmark = pytest.mark.anyio


@pytest.fixture
def fake_base(fake: FakeUpstream, net: Loopback) -> str:
    """The fake OpenAI-compatible upstream on the test's loopback; its /v1 base URL."""
    fake.served = ["alpha", "bad?fail=500", "slow?latency=2", "beta"]
    return net.serve(fake.app()) + "/v1"


def bench_app(settings: Settings, net: Loopback, clock: ManualClock | None = None):
    """The app in-process, its upstream calls reaching what ``net`` serves."""
    return running_app(settings, clock or ManualClock(), net.transport(httpx))


async def add_endpoint(run: Running, base: str) -> None:
    await endpoints.add(run.ctx.db, Endpoint("fake", base))


async def queue_of(client: httpx.AsyncClient) -> dict[str, Any]:
    return (await client.get("/api/onboarding")).json()


async def until(client: httpx.AsyncClient, ready) -> dict[str, Any]:
    with anyio.fail_after(60):
        while True:
            state = await queue_of(client)
            if ready(state["items"]):
                return state
            await anyio.sleep(0.05)


def all_finished(items: list[dict[str, Any]]) -> bool:
    return bool(items) and all(i["state"] not in ("queued", "running") for i in items)


async def test_a_model_is_brought_on_step_by_step(settings: Settings, net: Loopback, fake: FakeUpstream,
                                                   fake_base: str) -> None:
    async with bench_app(settings, net) as run:
        await add_endpoint(run, fake_base)
        queued = await run.client.post("/api/onboarding", json={"items": [{"served": "alpha", "endpoint": "fake"}]})
        assert queued.status_code == 202
        [item] = (await until(run.client, all_finished))["items"]
        model = await models.get(run.ctx.db, "alpha")
        [suite_run] = await suite_store.runs(run.ctx.db)
    assert item["state"] == "done" and item["alias"] == "alpha"
    assert [(e["step"], e["name"], e["state"]) for e in item["log"]] == [
        (1, "served", "ok"), (2, "alias", "ok"), (3, "register", "ok"), (4, "probe", "ok"), (5, "suite", "ok")]
    assert not model.retired and not model.ad_hoc
    probe_calls = fake.calls[:4]  # the onboarding probe: 2 tiny, 2 large, capped
    assert [c.model for c in probe_calls] == ["alpha"] * 4 and {c.body.get("max_tokens") for c in probe_calls} == {16, 48}
    # the suite for this one model (suite.runner.for_model), its run named in the step's line
    assert suite_run["origin"] == "onboarding" and suite_run["request"]["models"] == ["alpha"]
    assert item["log"][4]["message"].startswith(f"suite run {suite_run['id']}: {suite_run['state']}")
    assert suite_run["items"].get("done", 0) >= 1 and fake.count("alpha") == 4 + suite_run["items"]["done"]


async def test_quick_leaves_the_suite_to_its_scheduled_passes(settings: Settings, net: Loopback, fake: FakeUpstream,
                                                              fake_base: str) -> None:
    async with bench_app(settings, net) as run:
        await add_endpoint(run, fake_base)
        await run.client.post("/api/onboarding", json={"items": [{"served": "alpha@fake", "mode": "quick",
                                                                   "alias": "quick-one", "role": "code"}]})
        [item] = (await until(run.client, all_finished))["items"]
        model = await models.get(run.ctx.db, "quick-one")
        assert await suite_store.runs(run.ctx.db) == []
    assert item["state"] == "done" and item["log"][4]["state"] == "skipped"
    assert item["log"][4]["message"] == "quick: left to the scheduled suite passes"
    assert model.role == "code" and model.served == "alpha" and fake.count("alpha") == 4


async def test_a_name_not_served_says_what_is_close(settings: Settings, net: Loopback, fake_base: str) -> None:
    async with bench_app(settings, net) as run:
        await add_endpoint(run, fake_base)
        await run.client.post("/api/onboarding", json={"items": [{"served": "alpah", "endpoint": "fake"}]})
        [item] = (await until(run.client, all_finished))["items"]
        assert await models.find(run.ctx.db, "alpah") is None
    assert item["state"] == "failed" and "did you mean alpha" in item["reason"]


async def test_no_answer_stops_with_the_reason_and_keeps_it_registered(settings: Settings, net: Loopback, fake_base: str) -> None:
    async with bench_app(settings, net) as run:
        await add_endpoint(run, fake_base)
        await run.client.post("/api/onboarding", json={"items": [{"served": "bad?fail=500@fake", "mode": "quick"}]})
        [item] = (await until(run.client, all_finished))["items"]
        model = await models.get(run.ctx.db, item["alias"])
    assert item["state"] == "no answer" and "other" in item["reason"] and "500" in item["reason"]
    assert [e["name"] for e in item["log"]][-1] == "probe" and not model.retired


async def test_ad_hoc_is_registered_and_never_probed(settings: Settings, net: Loopback, fake: FakeUpstream, fake_base: str) -> None:
    async with bench_app(settings, net) as run:
        await add_endpoint(run, fake_base)
        await run.client.post("/api/onboarding", json={"items": [{"served": "beta", "endpoint": "fake",
                                                               "mode": "quick-adhoc"}]})
        [item] = (await until(run.client, all_finished))["items"]
        model = await models.get(run.ctx.db, "beta")
    assert item["state"] == "done" and model.ad_hoc and fake.count() == 0


async def test_a_batch_with_one_bad_item_is_refused_whole(settings: Settings, net: Loopback, fake_base: str) -> None:
    async with bench_app(settings, net) as run:
        await add_endpoint(run, fake_base)
        refused = await run.client.post("/api/onboarding", json={"items": [
            {"served": "alpha", "endpoint": "fake"}, {"served": "beta", "endpoint": "nowhere"},
            {"served": "alpha", "endpoint": "fake"}]})
        message = refused.json()["error"]["message"]
        assert refused.status_code == 400 and "nothing was queued" in message
        assert "item 2 (beta): no endpoint named 'nowhere'" in message and "item 3 (alpha): already queued" in message
        assert (await queue_of(run.client))["items"] == []


async def test_stop_skips_the_queue_and_clear_hides_what_finished(settings: Settings, net: Loopback, fake_base: str) -> None:
    async with bench_app(settings, net) as run:
        await add_endpoint(run, fake_base)
        await run.client.post("/api/onboarding", json={"items": [{"served": s, "endpoint": "fake", "mode": "quick"}
                                                              for s in ("slow?latency=2", "alpha", "beta")]})
        await until(run.client, lambda items: items[0]["state"] == "running" and items[0]["step"] >= 3)
        stopped = (await run.client.post("/api/onboarding/stop", json={})).json()
        assert stopped["skipped"] == 2 and stopped["stopping"] == 1
        items = (await until(run.client, all_finished))["items"]
        assert [i["state"] for i in items] == ["skipped", "skipped", "skipped"]
        assert items[0]["reason"].startswith("stopped after step") and items[1]["reason"] == "stopped"
        cleared = (await run.client.post("/api/onboarding/clear", json={})).json()
        assert cleared["cleared"] == 3 and cleared["items"] == []


async def test_the_queue_and_its_running_item_survive_a_restart(settings: Settings, net: Loopback, fake: FakeUpstream,
                                                                 fake_base: str) -> None:
    clock = ManualClock()
    async with bench_app(settings, net, clock) as run:
        await add_endpoint(run, fake_base)
        await run.client.post("/api/onboarding", json={"items": [{"served": s, "endpoint": "fake", "mode": "quick"}
                                                              for s in ("slow?latency=2", "alpha")]})
        before = await until(run.client, lambda items: items[0]["state"] == "running" and items[0]["step"] >= 3)
    assert [i["state"] for i in before["items"]] == ["running", "queued"]
    async with bench_app(settings, net, clock) as run:
        items = (await until(run.client, all_finished))["items"]
        registered = [m.alias for m in await models.list_all(run.ctx.db)]
    assert [i["state"] for i in items] == ["done", "done"]
    assert [e["name"] for e in items[0]["log"]] == ["served", "alias", "register", "probe", "suite"]
    assert sorted(registered) == ["alpha", "slow-latency-2"]
