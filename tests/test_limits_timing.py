"""When a call counts against a hand-set limit: from the moment it is let go, never from when it was
asked for (a call that waited in the pacer would otherwise leave the window early and let the next
window burst), and each retry as the request it is. In-process, through ``ModelCaller`` against a
mock upstream that keeps its own arrival times; ``e2e/test_limits_windows_processes.py`` is the same
rule across two server processes over whole minutes."""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import httpx
import pytest

from benchwarmers_mcp.errors import RateLimited, UpstreamFailure
from benchwarmers_mcp.messages import ModelRequest, user
from benchwarmers_mcp.store import Database, endpoints, ledger, models
from benchwarmers_mcp.store import limits as store
from benchwarmers_mcp.store.endpoints import Endpoint
from benchwarmers_mcp.store.limits import Spend, UserLimit
from benchwarmers_mcp.store.models import ModelRecord
from benchwarmers_mcp.upstream import pacing
from benchwarmers_mcp.upstream.caller import ModelCaller
from benchwarmers_mcp.upstream.keys import KeyStore
from benchwarmers_mcp.upstream.pacing import PacingPolicy

pytestmark = pytest.mark.anyio
HELLO = ModelRequest("", (user("hello"),))
SLACK = 2.0  # PacingPolicy's


class Clocked:
    """A mock upstream that keeps when each request reached it; ``fail`` maps a model to the
    responses it gives first; ``hold`` maps a model to another whose request its next failure
    waits for (``came``: an event per model, set when a request for it arrives)."""

    def __init__(self) -> None:
        self.arrivals: list[tuple[str, float]] = []
        self.fail: dict[str, list[httpx.Response]] = {}
        self.hold: dict[str, str] = {}
        self.came: defaultdict[str, anyio.Event] = defaultdict(anyio.Event)

    async def handler(self, request: httpx.Request) -> httpx.Response:
        model = json.loads(request.content).get("model", "")
        self.arrivals.append((model, time.time()))
        self.came[model].set()
        if self.fail.get(model):
            if model in self.hold:
                await self.came[self.hold.pop(model)].wait()
            return self.fail[model].pop(0)
        return httpx.Response(200, json={"choices": [{"message": {"content": "fine"}, "finish_reason": "stop"}],
                                         "usage": {"prompt_tokens": 5, "completion_tokens": 2}})


@pytest.fixture
async def db(home: Path) -> AsyncIterator[Database]:
    async with Database(home / "benchwarmers.db") as database:
        await endpoints.add(database, Endpoint("up", "http://up.test/v1"))
        for alias in ("m1", "m2"):
            await models.register(database, ModelRecord(alias, alias, "up", alias))
        yield database


@pytest.fixture
def upstream() -> Clocked:
    return Clocked()


@pytest.fixture
async def caller(db: Database, upstream: Clocked, home: Path) -> AsyncIterator[ModelCaller]:
    async with httpx.AsyncClient(transport=httpx.MockTransport(upstream.handler)) as client:
        yield ModelCaller(db, KeyStore(home.parent / "config", {}), client,
                          PacingPolicy(backoff=0.01, recheck=0.2, margin=0.5))


async def call(caller: ModelCaller, alias: str = "m1", timeout: float = 10):
    return await caller.complete(await models.get(caller.db, alias), HELLO, timeout=timeout)


def test_the_window_counts_a_call_from_when_it_was_sent_plus_the_slack():
    assert PacingPolicy().slack == SLACK
    limit = UserLimit("connection", "up", "rpm", 1)
    now = 1_000_000.0
    sent = [Spend(now - 60.1, 1, 0, 0)]
    assert pacing.check_limit(limit, sent, 0, now, "up", "m1") is None, "without slack: out of the window"
    block = pacing.check_limit(limit, sent, 0, now, "up", "m1", slack=SLACK)
    assert block is not None and block.free_at == pytest.approx(now - 60.1 + 60 + SLACK)
    assert pacing.check_limit(limit, sent, 0, now + SLACK, "up", "m1", slack=SLACK) is None


async def test_a_call_that_waited_in_the_pacer_is_timed_from_when_it_was_sent(caller, db, upstream):
    await store.set_limit(db, "connection", "up", "rpm", 1)
    await ledger.append(db, ledger.UsageRow("m2", "up", "up", "m2", "ok", t=time.time() - 59))
    asked = time.time()
    assert (await call(caller)).text == "fine"  # it waits for the window to free
    [(_, arrived)] = upstream.arrivals
    [row] = [r for r in await ledger.rows(db) if r.alias == "m1"]
    assert asked + 0.5 < row.t <= arrived, "its ledger time is when it was let go, after its wait"
    before = time.time()
    with pytest.raises(RateLimited) as caught:  # the next one is counted against the call, not before it
        await call(caller, "m2", timeout=5)
    after, free_at = time.time(), row.t + 60 + caller.policy.slack
    assert free_at - after <= caught.value.retry_after <= free_at - before, "the wait is to the call's own window"


async def test_each_retry_is_admitted_like_any_request(caller, db, upstream):
    """rpm 2: m1's first attempt fails and waits to retry; m2 takes the second request of the window
    before that (m1's failure is answered once m2 has arrived), so m1's retry is not sent (the
    upstream sees 2 requests, never 3)."""
    await store.set_limit(db, "connection", "up", "rpm", 2)
    upstream.fail["m1"] = [httpx.Response(503, json={"error": {"message": "busy"}}, headers={"retry-after": "0.5"})]
    upstream.hold["m1"] = "m2"
    results: dict[str, object] = {}

    async def run(alias: str) -> None:
        try:
            results[alias] = (await call(caller, alias, timeout=8)).text
        except UpstreamFailure as e:
            results[alias] = e

    async with anyio.create_task_group() as tg:
        tg.start_soon(run, "m1")
        await upstream.came["m1"].wait()  # m1's first attempt was sent (and fails once m2 is sent too)
        tg.start_soon(run, "m2")
    assert [m for m, _ in upstream.arrivals] == ["m1", "m2"], "the retry found no room in the window"
    assert results["m2"] == "fine" and isinstance(results["m1"], UpstreamFailure)
    assert "busy" in results["m1"].message
    rows = {r.alias: r for r in await ledger.rows(db)}
    assert (rows["m1"].status, rows["m1"].attempts, rows["m2"].attempts) == ("error", 1, 1)
    assert await store.inflight_count(db) == 0, "every attempt's in-flight entry left with its call"


async def test_a_retry_that_fits_is_sent_and_counted_at_its_own_moment(caller, db, upstream):
    await store.set_limit(db, "connection", "up", "rpm", 3)
    upstream.fail["m1"] = [httpx.Response(503, json={"error": {"message": "busy"}}, headers={"retry-after": "0.3"})]
    assert (await call(caller)).text == "fine"
    [(_, first), (_, second)] = upstream.arrivals
    [row] = await ledger.rows(db)
    assert row.attempts == 2 and first + 0.3 <= row.t <= second, "timed at its last attempt, both counted"
    window = (await pacing.overview(db, time.time()))["connections"][0]["windows"][0]
    assert (window["used"], window["remaining"]) == (2, 1)
