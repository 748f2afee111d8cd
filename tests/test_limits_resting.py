"""Issue 29 item 5: a panel never waits minutes on one seat. A 429 with ``Retry-After: 30`` and a
window used up for 6 minutes rests the model until the window resets; an explorer whose call
would have to wait for its window is not seated; a member that would have to wait says so in its
seat at once; route mode hands such a member's turn on at once.

The upstream is the fake OpenAI-compatible one (``window=6m``: its replies report the requests
window used up until then). The caller runs on a moved clock: every wait in the pacer is a sleep
on it, recorded and passed at once, so a call that would have waited shows in ``clock.slept``
instead of holding the test for minutes.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import anyio
import anyio.lowlevel
import httpx
import openai
import pytest

from benchwarmers_mcp.context import Access, Context, RouteTuning
from benchwarmers_mcp.engine.panel import PanelRun, start_panel
from benchwarmers_mcp.engine.route import start_turn
from benchwarmers_mcp.errors import RateLimited
from benchwarmers_mcp.messages import Ask, ModelRequest, user
from benchwarmers_mcp.providers.base import error_for_status
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import Database, endpoints, ledger, models
from benchwarmers_mcp.store import collections as cs
from benchwarmers_mcp.store import limits as store
from benchwarmers_mcp.store.collections import Collection
from benchwarmers_mcp.store.endpoints import Endpoint
from benchwarmers_mcp.store.limits import Gate, Settlement
from benchwarmers_mcp.store.models import ModelRecord
from benchwarmers_mcp.upstream import quota
from benchwarmers_mcp.upstream.caller import CallInfo, ModelCaller
from benchwarmers_mcp.upstream.keys import KeyStore
from benchwarmers_mcp.upstream.pacing import PacingPolicy, Refused, Seen, consequences
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.loopback import Loopback
from tests.kits.seed import seed
from tests.kits.store import store_of

pytestmark = [pytest.mark.anyio, pytest.mark.backends]
WINDOW = 360.0  # the used-up window's reset, from the reply: 6 minutes
USED_UP = {"Retry-After": "30", "x-ratelimit-limit-requests": "10", "x-ratelimit-remaining-requests": "0",
           "x-ratelimit-reset-requests": "6m0s"}
NOW = 1_767_225_600.0
SEAT_WAIT = Settings.seat_wait  # 5 s
SERVED = {"solo": "solo", "aa-bad": "aa-bad?fail=429&window=6m", "aa-tight": "aa-tight?window=6m",
          "bb-good": "bb-good"}


@dataclass
class MovedClock:
    """The system's wall clock, moved on by every sleep on it (recorded in ``slept``, passed at once)."""

    offset: float = 0.0
    slept: list[float] = field(default_factory=list)
    tz: None = None

    def now(self) -> float:
        return time.time() + self.offset

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.offset += seconds
        await anyio.lowlevel.checkpoint()


def waited_the_window(slept: list[float], since: float) -> bool:
    """The sleeps add up to the window's reset as read when it was used up (at ``since``, monotonic):
    the wall clock goes on under the moved one, so the longer the machine took since, the less is
    left to sleep. Never a figure the machine's speed decides."""
    passed = time.monotonic() - since
    return WINDOW - passed - 5 <= sum(slept) <= WINDOW + 5


@dataclass
class Bench:
    ctx: Context
    clock: MovedClock
    fake: FakeUpstream

    @property
    def db(self) -> Database:
        return self.ctx.db

    async def panel(self, *members: str) -> PanelRun:
        ask = Ask("team", (user("review this"),))
        run = await start_panel(self.ctx, ask, Collection("team", members), "all", access=Access.unscoped())
        return await run.wait()

    async def call(self, alias: str) -> None:
        """One patient call, outside any panel (as the suite or a probe would make)."""
        await self.ctx.caller.complete(await models.get(self.db, alias), ModelRequest("", (user("hi"),)),
                                       timeout=60, info=CallInfo("suite", "measurement"))

    async def stalest(self, alias: str) -> None:
        """Make ``alias`` the least recently used, so that only what the bench knows keeps it off a panel."""
        await models.set_last_used(self.db, alias, None)

    async def rests(self) -> dict[str, float]:
        return {r["alias"]: r["rest_until"] for r in await store.rests(self.db, self.clock.now())}


@pytest.fixture
async def bench(settings: Settings, fake: FakeUpstream, upstream: str, net: Loopback,
                tmp_path: Path) -> AsyncIterator[Bench]:
    clock = MovedClock()
    async with Database(settings.store_target) as db, net.aclient() as client, anyio.create_task_group() as tg:
        await endpoints.add(db, Endpoint("fake", upstream))
        for alias, served in SERVED.items():
            await models.register(db, ModelRecord(alias, served, "fake", alias))
        await cs.save_gateway_settings(db, cs.GatewaySettings(max_calls=5, max_explorers=1))
        keys = KeyStore(tmp_path / "config", {})
        caller = ModelCaller(db, keys, client, PacingPolicy(backoff=0.01), clock=clock)
        ctx = Context(settings, db, keys, client, caller, tg, clock=clock,
                      route_tuning=RouteTuning(rotation=0.0))  # the timings of Settings
        yield Bench(ctx, clock, fake)
        tg.cancel_scope.cancel()


def seats(run: PanelRun) -> list[tuple[str, str, str]]:
    return [(s.seat, s.alias, s.status) for s in run.seats_in_seat_order()]


# -- rest until the later of the two resets --

@pytest.mark.parametrize(("headers", "wait"), [
    (USED_UP, WINDOW),  # Retry-After 30, the window reopens in 6 m: 6 m
    ({**USED_UP, "Retry-After": "900"}, 900.0),  # the stated wait is the later one
    ({**USED_UP, "x-ratelimit-remaining-requests": "3"}, 30.0),  # a window not used up holds nothing
])
def test_a_429s_wait_is_the_later_of_retry_after_and_a_used_up_windows_reset(headers, wait):
    assert quota.stated_wait(headers, {}, "", NOW) == pytest.approx(wait, abs=0.01)
    error = error_for_status(429, httpx.Headers(headers), b'{"error": {"message": "slow down"}}')
    assert isinstance(error, RateLimited) and error.retry_after == pytest.approx(wait, abs=1)


def test_a_window_the_429s_body_reports_used_up_rests_the_model_until_it_resets() -> None:
    """OpenRouter copies its headers into the body: a used-up daily window there outlasts the
    message's stated wait, so the rest lasts until it reopens."""
    reset = NOW + 5 * 3600
    body = {"error": {"code": 429, "message": "Rate limit exceeded: free-models-per-day. Please retry in 20s",
                      "metadata": {"headers": {"X-RateLimit-Limit": "50", "X-RateLimit-Remaining": "0",
                                               "X-RateLimit-Reset": str(int(reset * 1000))}}}}
    settled = Settlement(ledger.UsageRow("free", "openrouter", "openrouter", "free", "error"))
    error = RateLimited("upstream 429: Rate limit exceeded: free-models-per-day. Please retry in 20s",
                        upstream_status=429, retry_after=20.0)
    seen = Seen(429, {"content-type": "application/json"}, "openrouter.ai", json.dumps(body).encode())
    consequences(PacingPolicy(), settled, Gate(Endpoint("openrouter", "https://openrouter.ai/api/v1")), error, seen,
                 NOW)
    assert settled.rest is not None and settled.rest[0] == pytest.approx(reset)


async def test_a_429_with_a_used_up_window_rests_the_model_until_the_window_resets(bench: Bench) -> None:
    run = await bench.panel("solo")
    assert seats(run) == [("member1", "solo", "ok"), ("explorer", "aa-bad", "error")]
    rest = (await bench.rests())["aa-bad"]
    assert rest >= bench.clock.now() + WINDOW - 30, "rested until the window reopens, not for Retry-After's 30 s"
    assert bench.fake.count(SERVED["aa-bad"]) == 1, "a 30 s Retry-After with the window used up: not retried"


@pytest.fixture
def one(home: Path, upstream: str) -> None:
    """A collection of one member, and one explorer seat that the 429ing model takes."""
    seed(home, base_url=upstream, served={"solo": "solo", "aa-bad": SERVED["aa-bad"]}, collections={"one": ["solo"]})

    async def one_explorer() -> None:
        async with store_of(home) as db:
            await cs.save_gateway_settings(db, cs.GatewaySettings(max_calls=5, max_explorers=1))

    anyio.run(one_explorer)


def test_through_the_gateway_the_429s_model_rests_until_its_window_resets(one: None, gateway: str, net: Loopback,
                                                                            http: httpx.Client) -> None:
    client = openai.OpenAI(http_client=net.client2(), base_url=gateway + "/v1", api_key="anything", max_retries=0)
    reply = client.chat.completions.create(model="bench/one", messages=[{"role": "user", "content": "review this"}])
    assert [(s["alias"], s["status"]) for s in reply.model_extra["bench"]["seats"]] == [("solo", "ok"),
                                                                                      ("aa-bad", "error")]
    [rest] = http.get(gateway + "/bench/quotas").json()["connections"][0]["resting"]
    until = quota.parse_reset(rest["until"], time.time())
    assert rest["alias"] == "aa-bad" and until is not None and until > time.time() + WINDOW - 30, rest


# -- never seat an explorer that would have to wait --

@pytest.mark.parametrize("alias", ["aa-bad", "aa-tight"])
async def test_an_explorer_whose_window_is_used_up_is_not_seated(bench: Bench, alias: str) -> None:
    """Its window used up for 6 minutes, reported with a 429 (whose 30 s rest is over: resumed
    here) or with a whole answer (no rest at all): the next panel seats another explorer."""
    if alias == "aa-bad":
        with pytest.raises(RateLimited):
            await bench.call(alias)
    else:
        await bench.call(alias)
    await store.resume(bench.db, alias=alias)
    assert alias not in await bench.ctx.resting()
    await bench.stalest(alias)
    for other in {"aa-bad", "aa-tight"} - {alias}:  # used just now: drawn after bb-good
        await models.set_last_used(bench.db, other, time.time())
    run = await bench.panel("solo")
    assert seats(run) == [("member1", "solo", "ok"), ("explorer", "bb-good", "ok")]
    assert bench.clock.slept == [], "nobody waited in the pacer"
    assert bench.fake.count(SERVED[alias]) == 1, "not called again"


# -- a member that must wait says so at once --

async def test_a_member_that_would_wait_for_its_window_says_so_in_its_seat_at_once(bench: Bench) -> None:
    await bench.call("aa-tight")  # answered, and reported its window used up for 6 minutes
    run = await bench.panel("aa-tight")
    [member] = [s for s in run.seats_done if s.seat == "member1"]
    assert member.status == "rate_limited", member.error
    [window] = await store.live_quotas(bench.db, "fake", "aa-tight", bench.clock.now())
    resets = window.record.reset_at
    assert resets is not None and resets == pytest.approx(bench.clock.now() + WINDOW, abs=30)
    assert "not sent" in member.error and "0 left" in member.error and "try again in 6 m" in member.error
    assert f"(at {quota.iso(resets)})" in member.error, "it says when it can be called again"
    assert bench.clock.slept == [], "the seat did not wait in the pacer"
    assert bench.fake.count(SERVED["aa-tight"]) == 1
    rows = sorted((r for r in await ledger.rows(bench.db) if r.alias == "aa-tight"), key=lambda r: r.t)
    assert [r.status for r in rows] == ["ok", "refused"]
    assert (await bench.rests())["aa-tight"] == resets, "it rests until the window frees: later panels pass over it"


async def test_a_call_without_a_bound_still_waits_for_its_window_and_a_seat_for_a_short_one(
        bench: Bench) -> None:
    """The suite's and health's calls (no bound) wait for a window within their deadline, as before;
    a seat's call (bound by ``BENCH_SEAT_WAIT``, 5 s) waits for one that frees within that."""
    caller = bench.ctx.caller
    assert isinstance(caller, ModelCaller)
    since = time.monotonic()
    await bench.call("aa-tight")
    model = await models.get(bench.db, "aa-tight")
    gate = await caller.gate_of(model)
    with pytest.raises(Refused):
        await caller.pacer.admit(gate, "aa-tight", 10, bench.clock.now() + 600, wait=SEAT_WAIT)
    assert bench.clock.slept == []
    assert await caller.held(model, 10, SEAT_WAIT) is not None
    admitted = await caller.pacer.admit(gate, "aa-tight", 10, bench.clock.now() + 600)
    assert waited_the_window(bench.clock.slept, since) and admitted.ticket is not None
    await store.set_limit(bench.db, "model", "bb-good", "rpm", 1)
    await bench.call("bb-good")
    bench.clock.offset += 58  # the minute frees in about 4 s (the window looks back 2 s longer)
    bench.clock.slept.clear()
    good = await models.get(bench.db, "bb-good")
    assert await caller.held(good, 10, SEAT_WAIT) is None, "a short wait holds nothing"
    await caller.pacer.admit(await caller.gate_of(good), "bb-good", 10, bench.clock.now() + 600, wait=SEAT_WAIT)
    assert 0 < sum(bench.clock.slept) <= SEAT_WAIT


# -- route mode: a member that would wait hands the turn on at once --

async def test_a_route_member_that_would_wait_hands_the_turn_on_at_once(bench: Bench) -> None:
    await bench.call("aa-tight")
    turn = await start_turn(bench.ctx, Ask("agents", (user("refactor"),)), Collection("agents", ("aa-tight", "bb-good")),
                            access=Access.unscoped(), hold_all=True)
    await turn.ready()
    assert turn.alias == "bb-good"
    assert bench.clock.slept == [], "the first member did not wait for its window"
    assert bench.fake.count(SERVED["aa-tight"]) == 1


async def test_a_member_refused_for_its_limit_does_not_merge_the_panel(bench: Bench) -> None:
    """A call larger than its model's token limit on its own is refused for good, without a rest:
    the seat says so, and the collection's merger being that model, the next candidate merges."""
    await store.set_limit(bench.db, "model", "bb-good", "tpm", 1)
    ask = Ask("team", (user("review this"),))
    collection = Collection("team", ("bb-good", "solo"), merger="bb-good")
    run = await (await start_panel(bench.ctx, ask, collection, "merged", access=Access.unscoped())).wait()
    [limited] = [s for s in run.seats_done if s.alias == "bb-good"]
    assert limited.status == "rate_limited" and "this call alone is about" in limited.error
    assert run.merge is not None and run.merge.record is not None and run.merge.record.alias == "solo", run.merge
    assert bench.fake.count("bb-good") == 0


async def test_bench_seat_wait_sets_how_long_a_seat_may_wait(bench: Bench, settings: Settings) -> None:
    """``BENCH_SEAT_WAIT`` set past the window: the seat waits for it (on the moved clock) and answers."""
    assert Settings.from_env({"BENCH_SEAT_WAIT": "600"}, home=settings.home).seat_wait == 600
    bench.ctx.settings = replace(settings, seat_wait=600.0)
    since = time.monotonic()
    await bench.call("aa-tight")
    run = await bench.panel("aa-tight")
    [member] = [s for s in run.seats_done if s.seat == "member1"]
    assert member.status == "ok", member.error
    assert waited_the_window(bench.clock.slept, since), bench.clock.slept
    assert bench.fake.count(SERVED["aa-tight"]) == 2
