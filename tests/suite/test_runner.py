"""Suite runs end to end: every outcome from fake models, rate limits rested and resumed, one call at a
time per connection, a restart that finishes without asking a task twice, all in the ledger as
measurement."""

from __future__ import annotations

import time
from typing import Any

import anyio
import httpx
import pytest

from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import Database, ledger
from benchwarmers_mcp.store import limits as limit_store
from benchwarmers_mcp.store import suite as suite_store
from benchwarmers_mcp.suite import library, runner
from benchwarmers_mcp.suite.plan import RunRequest
from benchwarmers_mcp.suite.runner import RunPolicy
from benchwarmers_mcp.upstream.caller import PacingPolicy
from tests.suite.kit import FakeUpstream, add_models, app_client, chat_reply, engine, wait_api_run, wait_run

NO_FAULT = "NO FAULT\nEvery branch returns what its callers expect; nothing here misbehaves."
FAST = RunPolicy(timeout=10, gap=0, retries=1, backoff=0.01)


def pack_tasks() -> dict[str, str]:
    """A bug, its control, a true and a false claim from the starter pack."""
    tasks = library.catalog_sync(library.PACK_DIR.parent / "no-home", library.PACK_DIR).live()
    bug = next(t for t in tasks if t.kind == "bug")
    return {"bug": bug.id, "control": bug.pair, "true": next(t.id for t in tasks if t.truth is True),
            "false": next(t.id for t in tasks if t.truth is False)}


def by_alias(models: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {m["alias"]: m for m in models}


@pytest.mark.anyio
async def test_every_outcome_from_fake_models(settings: Settings):
    t = pack_tasks()
    fakes = {"no-fault": "simulated/judge?say=no-fault", "line-one": "simulated/judge?say=line1",
             "terse": "simulated/judge?say=short", "refuser": "simulated/judge?say=refuse",
             "broke": "simulated/judge?say=notice", "sayer": "simulated/judge?say=true"}
    async with Database(settings.store_target) as db:
        await add_models(db, fakes, endpoint="sim", api="simulated")
        await add_models(db, {"sleepy": "simulated/judge?fail=timeout&hang=30"}, endpoint="sim2", api="simulated")
    async with app_client(settings) as client:
        started = await client.post("/api/suite/run", json={"models": list(fakes), "tasks": list(t.values()),
                                                             "timeout": 5, "gap": 0})
        assert started.status_code == 200, started.text
        slow = await client.post("/api/suite/run", json={"models": ["sleepy"], "tasks": [t["bug"], t["control"]],
                                                          "timeout": 0.3, "gap": 0})
        done = await wait_api_run(client, started.json()["run"]["id"])
        await wait_api_run(client, slow.json()["run"]["id"])
        assert done["run"]["state"] == "done" and len(done["answers"]) == 6 * 4
        scores = by_alias((await client.get("/api/suite/scores")).json()["models"])
        board = (await client.get("/api/suite/board", params={"matrix": "all"})).json()
        own = (await client.get("/api/suite/board")).json()
        alone = (await client.get("/api/suite/scores", params={"model": "terse"})).json()["models"]
    assert [m["alias"] for m in alone] == ["terse"]
    trust = by_alias(board["trust"])  # the Benchmarks page: recall against confidently wrong
    assert (trust["line-one"]["recall"], trust["line-one"]["confidently_wrong"]) == (0.0, round(2 / 3, 3))
    hunt = by_alias(board["bug_hunt"])  # only the bug and its control count in the bug hunt
    assert (hunt["line-one"]["wrong_line"], hunt["line-one"]["false_alarm"], hunt["no-fault"]["clean"]) == (1, 1, 1)
    assert set(board["matrix"]["models"]) == {*fakes, "sleepy"} and set(board["matrix"]["tasks"]) == set(t.values())
    assert board["matrix"]["scope"] == "all" and board["tasks"][t["bug"]]["origin"] == "pack"
    assert own["matrix"] == {"scope": "own", "models": [], "tasks": [], "cells": []}  # the pack is not the user's code
    assert (trust["sleepy"]["recall"], trust["sleepy"]["not_a_score_why"]) == (None, {"timeout": 2})
    cell = next(c for c in board["matrix"]["cells"] if c["task"] == t["control"] and c["alias"] == "no-fault")
    assert (cell["answers"], cell["good"], cell["latest"]) == (1, 1, "clean")
    assert board["tasks"][t["bug"]]["kind"] == "bug"

    none = scores["no-fault"]  # a bug missed, its control clean, both claims without a verdict
    assert (none["found"], none["missed"], none["clean"], none["false_alarm"], none["wrong_line"]) == (0, 3, 1, 0, 0)
    assert none["recall"] == 0.0 and none["recall_interval"][0] == 0.0 and none["recall_interval"][1] > 0.3
    assert (none["confidently_wrong"], none["opportunities"]) == (0.0, 3)  # misses are not wrong
    one = scores["line-one"]  # the wrong line on the bug, a false alarm on the control
    assert (one["wrong_line"], one["false_alarm"], one["found"], one["wrong"], one["opportunities"]) == (1, 1, 0, 2, 3)
    sayer = scores["sayer"]  # VERDICT: TRUE to everything: the true claim found, the false one a false alarm
    assert (sayer["found"], sayer["false_alarm"], sayer["missed"]) == (1, 1, 2)
    for alias, why in (("terse", "too short"), ("refuser", "refusal"), ("broke", "notice"), ("sleepy", "timeout")):
        m = scores[alias]  # never 0/N: no outcome, no recall, only "not a score"
        assert m["scored"] == 0 and m["recall"] is None and m["confidently_wrong"] is None, alias
        assert m["not_a_score_why"] == {why: 4 if alias != "sleepy" else 2}, alias
    async with Database(settings.store_target) as db:
        rows = [r for r in await ledger.rows(db) if r.caller == "suite"]
        assert len(rows) == 6 * 4 + 2 and {r.purpose for r in rows} == {"measurement"}
        kept = await suite_store.answers(db, alias="line-one")
        assert all(a["answer"].startswith("FAULT: line 1") for a in kept)  # each answer is kept


@pytest.mark.anyio
async def test_a_rate_limit_is_not_a_score_then_the_run_resumes(settings: Settings):
    t = pack_tasks()
    catalog = library.catalog_sync(settings.home)
    bug_prompt = library.prompt_sync(catalog.entry(t["bug"]), {}).rstrip("\n")

    def reply(model: str, prompt: str, times: int) -> httpx.Response:
        if prompt.rstrip("\n") == bug_prompt and times == 1:
            return httpx.Response(429, headers={"retry-after": "2"},
                                  json={"error": {"message": "slow down", "type": "rate_limit"}})
        return chat_reply(model, NO_FAULT)

    fake = FakeUpstream(reply)
    async with engine(settings, fake.transport(), PacingPolicy(short_wait=0.5)) as ctx:
        await add_models(ctx.db, {"m": "m"})
        run = await runner.start(ctx, RunRequest(models=("m",), tasks=(t["bug"], t["control"])), FAST)
        with anyio.fail_after(60):
            while True:  # the bug's item goes back to pending, resting, with no score
                resting = [i for i in await suite_store.items(ctx.db, run) if i.rest_until and i.state == "pending"]
                if resting:
                    break
                await anyio.sleep(0.01)
        assert resting[0].task == t["bug"] and "slow down" in resting[0].last_error
        assert (await suite_store.run_row(ctx.db, run))["resting_until"] is not None
        assert await suite_store.answers(ctx.db, task=t["bug"]) == []
        row = await wait_run(ctx.db, run)
        assert row["state"] == "done"
        answers = {a["task"]: a for a in await suite_store.answers(ctx.db, run=run)}
        assert len(answers) == 2 and answers[t["bug"]]["outcome"] == "missed" and answers[t["control"]]["outcome"] \
            == "clean"
        items = {i.task: i for i in await suite_store.items(ctx.db, run)}
        assert items[t["bug"]].attempts == 1  # the rate-limited try is not counted against the item
    assert sorted(fake.seen.values()) == [1, 2]  # the control once, the bug twice (once refused)


@pytest.mark.anyio
async def test_one_call_at_a_time_per_connection_with_the_gap(settings: Settings):
    t = pack_tasks()
    live: dict[str, int] = {}
    most: dict[str, int] = {}
    spans: dict[str, list[tuple[float, float]]] = {}

    async def handler(request: httpx.Request) -> httpx.Response:
        host = request.url.host
        live[host] = live.get(host, 0) + 1
        most[host] = max(most.get(host, 0), live[host])
        began = time.monotonic()
        await anyio.sleep(0.05)
        live[host] -= 1
        spans.setdefault(host, []).append((began, time.monotonic()))
        return chat_reply("x", NO_FAULT)

    async with engine(settings, httpx.MockTransport(handler)) as ctx:
        await add_models(ctx.db, {"a1": "a1", "a2": "a2"}, endpoint="one", base="http://one.test/v1")
        await add_models(ctx.db, {"b1": "b1"}, endpoint="two", base="http://two.test/v1")
        run = await runner.start(ctx, RunRequest(models=("a1", "a2", "b1"), tasks=tuple(t.values())),
                                 RunPolicy(timeout=10, gap=0.1))
        assert (await wait_run(ctx.db, run))["state"] == "done"
    assert most == {"one.test": 1, "two.test": 1}
    calls = sorted(spans["one.test"])
    assert len(calls) == 8 and all(b[0] - a[1] >= 0.1 for a, b in zip(calls, calls[1:], strict=False))


@pytest.mark.anyio
async def test_a_run_interrupted_by_a_restart_finishes_without_asking_a_task_twice(settings: Settings):
    tasks = tuple(t.id for t in library.catalog_sync(settings.home).live()[:6])
    fake = FakeUpstream(lambda model, prompt, times: chat_reply(model, NO_FAULT))
    async with engine(settings, fake.transport()) as ctx:
        await add_models(ctx.db, {"m": "m"})
        await limit_store.set_limit(ctx.db, "connection", "fake", "rpm", 3)  # the fourth call waits a minute
        run = await runner.start(ctx, RunRequest(models=("m",), tasks=tasks), RunPolicy(timeout=120, gap=0))
        with anyio.fail_after(60):
            while True:
                states = [i.state for i in await suite_store.items(ctx.db, run)]
                if states.count("done") == 3 and states.count("asking") == 1:
                    break
                await anyio.sleep(0.01)
        await anyio.sleep(0.1)  # the fourth call is waiting on the pacer, not sent
    assert sum(fake.seen.values()) == 3
    async with Database(settings.store_target) as db:  # while it is down, the user lifts the limit
        assert [i.state for i in await suite_store.items(db, run)].count("asking") == 0  # given back
        await limit_store.set_limit(db, "connection", "fake", "rpm", None)
        assert await suite_store.unfinished_runs(db) == [run]
    async with engine(settings, fake.transport()) as ctx:  # the restart
        assert await runner.resume(ctx) == [run]
        assert (await wait_run(ctx.db, run))["state"] == "done"
        answers = await suite_store.answers(ctx.db, run=run)
    assert len(fake.seen) == 6 and set(fake.seen.values()) == {1}  # each task asked exactly once
    assert sorted(a["task"] for a in answers) == sorted(tasks)


@pytest.mark.anyio
async def test_unfinished_runs_continue_when_the_server_starts(settings: Settings):
    t = pack_tasks()
    async with engine(settings) as ctx:
        await add_models(ctx.db, {"no-fault": "simulated/judge?say=no-fault"}, endpoint="sim", api="simulated")
        run = await runner.create(ctx, RunRequest(models=("no-fault",), tasks=(t["bug"], t["control"])),
                                  RunPolicy(timeout=5, gap=0))  # planned, never started: as if the server died
    async with app_client(settings) as client:
        done = await wait_api_run(client, run)
    assert done["run"]["state"] == "done"
    assert sorted(a["outcome"] for a in done["answers"]) == ["clean", "missed"]


@pytest.mark.anyio
async def test_upstream_failures_are_retried_then_not_a_score(settings: Settings):
    t = pack_tasks()
    fake = FakeUpstream(lambda model, prompt, times: httpx.Response(
        500, json={"error": {"message": "boom", "type": "server_error"}}) if "gone" in model
        else chat_reply(model, NO_FAULT))
    async with engine(settings, fake.transport(), PacingPolicy(retries=0, failure_rest=1.0)) as ctx:
        await add_models(ctx.db, {"gone": "gone", "fine": "fine"})
        run = await runner.start(ctx, RunRequest(models=("gone", "fine"), tasks=(t["control"],)), FAST)
        assert (await wait_run(ctx.db, run))["state"] == "done"
        answers = {a["alias"]: a for a in await suite_store.answers(ctx.db, run=run)}
    assert (answers["gone"]["scored"], answers["gone"]["reason"], answers["gone"]["status"]) == (False, "error", "error")
    assert answers["fine"]["outcome"] == "clean"
    assert fake.seen["gone", next(p for m, p in fake.seen if m == "gone")] == 2  # asked again after its cool-down


@pytest.mark.anyio
async def test_scheduled_jobs_and_onboarding_entry_points(settings: Settings):
    async with engine(settings) as ctx:
        await add_models(ctx.db, {"free-one": "simulated/judge?say=no-fault"}, endpoint="sim", api="simulated")
        assert await runner.scheduled(ctx, free_only=False, policy=FAST) is None  # no paid model
        free = await runner.scheduled(ctx, free_only=True, policy=FAST)
        assert free is not None and free["state"] == "done" and free["items"] == {"done": 6}
        assert free["origin"] == "scheduler" and free["request"]["next_free"] is True
        again = await runner.scheduled(ctx, free_only=True, policy=FAST)  # the next six tasks, not the same
        first = {a["task"] for a in await suite_store.answers(ctx.db, run=free["id"])}
        second = {a["task"] for a in await suite_store.answers(ctx.db, run=again["id"])}
        assert len(second) == 6 and not first & second
        onboarding = await runner.for_model(ctx, "free-one", limit_seconds=60, policy=FAST)
        assert onboarding["state"] == "done" and onboarding["origin"] == "onboarding"
