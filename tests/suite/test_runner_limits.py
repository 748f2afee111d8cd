"""Runs that end although something stands in the way: a model that stays rate limited is given up
on (not a score: rate limited) and the run finishes; an item or a connection held by a process that
died is free again within one short hold, while a live holder's holds are renewed; the scheduler's
``suite-free`` job by its own name."""

from __future__ import annotations

import time

import anyio
import httpx
import pytest

from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import suite as suite_store
from benchwarmers_mcp.suite import runner, stats
from benchwarmers_mcp.suite.plan import RunRequest
from benchwarmers_mcp.suite.runner import RunPolicy
from benchwarmers_mcp.upstream.caller import PacingPolicy
from tests.suite.kit import FakeUpstream, add_models, chat_reply, engine, wait_run
from tests.suite.test_runner import FAST, NO_FAULT, pack_tasks


@pytest.mark.anyio
async def test_a_model_that_stays_rate_limited_is_given_up_on_and_the_run_finishes(settings: Settings):
    t = pack_tasks()

    def reply(model: str, prompt: str, times: int) -> httpx.Response:
        if model == "hot":
            return httpx.Response(429, headers={"retry-after": "1"},
                                  json={"error": {"message": "slow down", "type": "rate_limit"}})
        return chat_reply(model, NO_FAULT)

    fake = FakeUpstream(reply)
    async with engine(settings, fake.transport(), PacingPolicy(short_wait=0.1)) as ctx:
        await add_models(ctx.db, {"hot": "hot"}, endpoint="hot", base="http://hot.test/v1")
        await add_models(ctx.db, {"cool": "cool"})
        tasks = (t["bug"], t["control"], t["true"])
        run = await runner.start(ctx, RunRequest(models=("hot", "cool"), tasks=tasks),
                                 RunPolicy(timeout=10, gap=0, give_up=3))
        row = await wait_run(ctx.db, run)
        answers = await suite_store.answers(ctx.db, run=run)
        items = [i for i in await suite_store.items(ctx.db, run) if i.alias == "hot"]
        scores = {m["alias"]: m for m in stats.scores(await suite_store.score_rows(ctx.db))}
    assert row["state"] == "done" and row["items"] == {"done": 6}
    hot = [a for a in answers if a["alias"] == "hot"]
    assert len(hot) == 1 and (hot[0]["scored"], hot[0]["reason"], hot[0]["status"]) == (False, "rate limited",
                                                                                          "rate limited")
    assert "slow down" in hot[0]["error"]
    assert sum(i.rests for i in items) == 2  # rested twice, given up on at the third rate limit
    unasked = [i for i in items if i.answer is None]
    assert len(unasked) == 2 and all(i.last_error.startswith("not asked: hot stayed rate limited") for i in unasked)
    assert sum(n for (model, _), n in fake.seen.items() if model == "hot") == 3
    assert len([a for a in answers if a["alias"] == "cool"]) == 3  # the other model went on
    assert scores["hot"]["not_a_score_why"] == {"rate limited": 1} and scores["hot"]["recall"] is None


@pytest.mark.anyio
async def test_an_item_held_by_a_process_that_died_is_asked_once_its_short_hold_ends(settings: Settings):
    t = pack_tasks()
    fake = FakeUpstream(lambda model, prompt, times: chat_reply(model, NO_FAULT))
    async with engine(settings, fake.transport()) as ctx:
        await add_models(ctx.db, {"m": "m"})
        run = await runner.create(ctx, RunRequest(models=("m",), tasks=(t["bug"],)),
                                  RunPolicy(timeout=10, gap=0, hold=0.5))
        [item] = await suite_store.items(ctx.db, run)
        dead_until = time.time() + 0.5  # what a process holds before it dies: never renewed
        assert await suite_store.hold_item(ctx.db, item.id, "dead", dead_until)
        assert await suite_store.take_lease(ctx.db, item.connection, "dead", dead_until) is None
        with anyio.fail_after(60):
            await runner.execute(ctx, run)
        [answer] = await suite_store.answers(ctx.db, run=run)
        assert (await suite_store.run_row(ctx.db, run))["state"] == "done"
    assert answer["at"] >= dead_until and answer["outcome"] == "missed"
    assert sum(fake.seen.values()) == 1


# a hold renewed every third of it lapses only if a renewal comes two thirds of it late: 2 s here,
# which no busy machine takes (0.9 s, as it was, some did)
HOLD = 3.0


@pytest.mark.anyio
async def test_a_live_holder_keeps_its_items_and_its_connection_past_one_hold(settings: Settings):
    t = pack_tasks()
    seen: dict[str, int] = {}

    async def slow(request: httpx.Request) -> httpx.Response:
        seen[request.content.decode()] = seen.get(request.content.decode(), 0) + 1
        await anyio.sleep(2.5 * HOLD)  # longer than two holds: only its renewals keep it
        return chat_reply("m", NO_FAULT)

    async with engine(settings, httpx.MockTransport(slow)) as ctx:
        await add_models(ctx.db, {"m": "m"})
        run = await runner.create(ctx, RunRequest(models=("m",), tasks=(t["bug"], t["control"])),
                                  RunPolicy(timeout=60, gap=0, hold=HOLD))
        with anyio.fail_after(120):
            async with anyio.create_task_group() as tg:  # two executors on one run, as two processes would
                tg.start_soon(runner.execute, ctx, run)
                tg.start_soon(runner.execute, ctx, run)
        answers = await suite_store.answers(ctx.db, run=run)
        assert (await suite_store.run_row(ctx.db, run))["state"] == "done"
    assert sorted(a["task"] for a in answers) == sorted((t["bug"], t["control"]))
    assert len(seen) == 2 and set(seen.values()) == {1}  # each asked once


@pytest.mark.anyio
async def test_scheduled_free_is_the_free_job(settings: Settings):
    async with engine(settings) as ctx:
        await add_models(ctx.db, {"paid-one": "paid-one"})
        await add_models(ctx.db, {"free-one": "simulated/judge?say=no-fault"}, endpoint="sim", api="simulated")
        done = await runner.scheduled_free(ctx, policy=FAST)
        assert done is not None and done["state"] == "done" and done["origin"] == "scheduler"
        assert done["request"]["next_free"] is True and done["request"]["next"] is False
        assert {i.alias for i in await suite_store.items(ctx.db, done["id"])} == {"free-one"}


@pytest.mark.anyio
async def test_the_scheduler_and_onboarding_call_by_name_with_the_context_alone(settings: Settings):
    async with engine(settings) as ctx:
        await add_models(ctx.db, {"free-one": "simulated/judge?say=no-fault"}, endpoint="sim", api="simulated")
        assert await runner.scheduled(ctx) is None  # the paid job: no paid model on the bench
        nothing = await runner.for_model(ctx, "nobody")  # onboarding's call, with the default time limit
        assert nothing["state"] == "nothing" and "nobody" in nothing["note"]
        assert await suite_store.runs(ctx.db) == []
