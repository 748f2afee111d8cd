"""Windows a provider reports (``x-ratelimit-*``): when one resets, the calls queued behind it go out
at most its ``limit`` per window, not all at once; a 429 saying the window reopens in seconds rests
the model for those seconds; replies reporting one window in any order keep its lowest count; and
no error message says its prefix twice. Through ``ModelCaller`` against a mock upstream that keeps
fixed windows of its own and counts every request it sees in each."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import httpx
import pytest

from benchwarmers_mcp.errors import ProviderError, RateLimited
from benchwarmers_mcp.messages import ModelRequest, user
from benchwarmers_mcp.providers import base
from benchwarmers_mcp.store import Database, endpoints, ledger, models
from benchwarmers_mcp.store import limits as store
from benchwarmers_mcp.store.endpoints import Endpoint
from benchwarmers_mcp.store.limits import QuotaRecord, StoredQuota
from benchwarmers_mcp.store.models import ModelRecord
from benchwarmers_mcp.upstream import pacing
from benchwarmers_mcp.upstream.caller import ModelCaller
from benchwarmers_mcp.upstream.keys import KeyStore
from benchwarmers_mcp.upstream.pacing import PacingPolicy
from tests.kits.clock import MovedClock

pytestmark = pytest.mark.anyio
HELLO = ModelRequest("", (user("hello"),))
LIMIT, LENGTH = 2, 2.0  # the upstream's own window: 2 requests per 2 s


class Windowed:
    """Fixed windows of ``LENGTH`` seconds from its start, ``LIMIT`` requests each; it says so in
    OpenAI's headers on every reply (the reset to the millisecond) and answers 429 beyond it."""

    def __init__(self) -> None:
        self.now = time.time  # its clock (a test may give it the caller's)
        self.length = LENGTH
        self.start = self.now()
        self.seen: list[tuple[int, int]] = []  # (window, status) of every request, in arrival order
        self.message = "over the limit"

    def handler(self, request: httpx.Request) -> httpx.Response:
        json.loads(request.content)
        now = self.now()
        window = int((now - self.start) // self.length)
        used = sum(1 for w, status in self.seen if w == window and status == 200)
        headers = {"x-ratelimit-limit-requests": str(LIMIT),
                   "x-ratelimit-reset-requests": f"{self.start + (window + 1) * self.length - now:.3f}s"}
        if used >= LIMIT:
            self.seen.append((window, 429))
            return httpx.Response(429, json={"error": {"message": self.message}},
                                  headers={**headers, "x-ratelimit-remaining-requests": "0"})
        self.seen.append((window, 200))
        return httpx.Response(200, json={"choices": [{"message": {"content": "fine"}, "finish_reason": "stop"}]},
                              headers={**headers, "x-ratelimit-remaining-requests": str(LIMIT - used - 1)})

    def per_window(self) -> dict[int, int]:
        counts: dict[int, int] = {}
        for window, _ in self.seen:
            counts[window] = counts.get(window, 0) + 1
        return counts


@pytest.fixture
async def db(home: Path) -> AsyncIterator[Database]:
    async with Database(home / "benchwarmers.db") as database:
        await endpoints.add(database, Endpoint("up", "http://up.test/v1"))
        await models.register(database, ModelRecord("m1", "m1", "up", "m1"))
        yield database


@pytest.fixture
def upstream() -> Windowed:
    return Windowed()


@pytest.fixture
async def client(upstream: Windowed) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(transport=httpx.MockTransport(upstream.handler)) as http:
        yield http


def caller_for(db: Database, client: httpx.AsyncClient, home: Path, clock: MovedClock | None = None,
               **policy: float) -> ModelCaller:
    return ModelCaller(db, KeyStore(home.parent / "config", {}), client,
                       PacingPolicy(backoff=0.01, recheck=0.2, margin=0.5, **policy),  # type: ignore[arg-type]
                       clock=clock)


async def call(caller: ModelCaller, timeout: float = 30) -> str:
    try:
        return (await caller.complete(await models.get(caller.db, "m1"), HELLO, timeout=timeout)).text
    except ProviderError as e:
        return f"{type(e).__name__}: {e.message}"


async def test_a_queue_behind_a_reset_goes_out_at_the_windows_own_pace(db, client, upstream, home):
    caller = caller_for(db, client, home, retries=0)
    assert [await call(caller), await call(caller)] == ["fine", "fine"]  # the window, used up
    outcomes: list[str] = []

    async def one() -> None:
        outcomes.append(await call(caller))

    async with anyio.create_task_group() as tg:
        for _ in range(8):
            tg.start_soon(one)
    assert outcomes == ["fine"] * 8, "every queued call went out, once a window had room for it"
    assert [status for _, status in upstream.seen] == [200] * 10, "the upstream never had to refuse one"
    assert max(upstream.per_window().values()) <= LIMIT, upstream.per_window()
    assert len(upstream.per_window()) >= 5, "ten calls took at least five of the upstream's windows"


async def test_a_429_whose_window_reopens_in_seconds_rests_the_model_for_those_seconds(db, client, upstream, home):
    """On a moved clock (the caller's and the upstream's): the rest is read against the moment the
    window reopens, and waited out at once, whatever the machine's speed."""
    clock = MovedClock()
    caller = caller_for(db, client, home, clock, retries=0)
    upstream.now, upstream.length = clock.now, 20.0
    upstream.seen += [(0, 200), (0, 200)]  # someone else used this window up
    upstream.start = clock.now() - 0.5  # it reopens in 19.5 s
    reopens = upstream.start + upstream.length
    said = await call(caller)
    assert said.startswith("RateLimited: upstream 429: over the limit")
    [rest] = await store.rests(db, clock.now())
    assert reopens - 0.01 <= rest["rest_until"] <= clock.now() + 19.5, "rested until the window reopens, not 30 minutes"
    with pytest.raises(RateLimited) as caught:  # a panel does not wait out even a short rest it cannot fit
        await caller.complete(await models.get(db, "m1"), HELLO, timeout=1)
    assert caught.value.retry_after is not None and caught.value.retry_after <= 19.5
    await clock.sleep(rest["rest_until"] - clock.now() + 0.05)
    assert await call(caller) == "fine"


async def test_a_short_reset_429_is_retried_within_the_call(db, client, upstream, home):
    caller = caller_for(db, client, home)  # the default two retries
    upstream.seen += [(0, 200), (0, 200)]
    upstream.start = time.time() - 1.0
    assert await call(caller) == "fine"
    assert [status for _, status in upstream.seen[2:]] == [429, 200]
    assert await store.rests(db, time.time()) == [], "answered in the end: no rest"


async def test_no_error_says_its_prefix_twice(db, client, upstream, home):
    caller = caller_for(db, client, home, retries=0)
    upstream.seen += [(0, 200), (0, 200)]
    upstream.message = "upstream 429: upstream 429: slow down, try again in 20s"  # an upstream that is a gateway
    first = await call(caller)
    second = await call(caller)  # refused while the model rests, quoting why
    assert first == "RateLimited: upstream 429: slow down, try again in 20s"
    assert second.startswith("RateLimited: rate limit (not sent; paced by the bench): model m1 is resting after"
                             " upstream 429: slow down, try again in 20s; try again in")
    kept = json.dumps([await store.rests(db, 0), await store.open_alerts(db),
                       await pacing.overview(db, time.time()), [r.status for r in await ledger.rows(db)]])
    for text in (first, second, kept):
        assert "upstream 429: upstream 429" not in text, text
    assert base.prefixed("upstream 500", "upstream 500: upstream 500: boom") == "upstream 500: boom"
    assert base.prefixed("upstream 500", "boom") == "upstream 500: boom"


def _stored(remaining: int, reset_at: float, observed_at: float) -> StoredQuota:
    return StoredQuota("up", "m1", QuotaRecord("requests", "minute", 10, remaining, reset_at), observed_at)


def test_reports_of_one_window_keep_its_lowest_count_whatever_order_they_come_in():
    now = 1_000.0
    old = _stored(3, now + 30, now - 1)
    later_but_higher = QuotaRecord("requests", "minute", 10, 5, now + 30.4)
    kept = store.merged(old, later_but_higher, now, now)
    assert kept is not None and kept[0].remaining == 3 and kept[1] == now, "the lowest count, the latest sending"
    assert store.merged(old, QuotaRecord("requests", "minute", 10, 9, now + 90), now, now)[0].remaining == 9, \
        "a later window replaces it"
    assert store.merged(old, QuotaRecord("requests", "minute", 10, 0, now - 20), now - 2, now) is None, \
        "a window already over is dropped"
    expired = _stored(0, now - 1, now - 40)
    assert store.merged(expired, QuotaRecord("requests", "minute", 10, 8, now - 0.5), now, now)[0].remaining == 8


def test_a_reset_window_that_was_used_up_is_renewed_for_one_window_length():
    now = 1_000.0
    used_up = _stored(0, now - 1, now - 50)
    assert pacing.renewed(used_up, now) and not pacing.renewed(used_up, now + 60)
    assert not pacing.renewed(_stored(9, now - 1, now - 50), now), "far from its limit: nobody waits behind it"
    sent = [store.Spend(now - 0.5, 1, 0, 0)] * 10
    block = pacing.check_quota(used_up, sent, 0, now)
    assert block is not None and block.guess and block.free_at == now - 1 + 60
    assert pacing.check_quota(used_up, sent[:9], 0, now) is None
