"""Pacing and what failures do, through ``ModelCaller`` against a mock upstream (httpx.MockTransport)."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from benchwarmers_mcp.errors import AuthOrBilling, ModelGone, RateLimited, UpstreamFailure, UpstreamTimeout
from benchwarmers_mcp.messages import AnswerBuilder, ModelRequest, user
from benchwarmers_mcp.store import Database, endpoints, ledger, models
from benchwarmers_mcp.store import limits as store
from benchwarmers_mcp.store.endpoints import Endpoint
from benchwarmers_mcp.store.models import ModelRecord
from benchwarmers_mcp.upstream import pacing as limits
from benchwarmers_mcp.upstream.caller import ModelCaller
from benchwarmers_mcp.upstream.keys import KeyStore
from benchwarmers_mcp.upstream.pacing import PacingPolicy
from tests.kits.store import store_of

pytestmark = pytest.mark.anyio
HELLO = ModelRequest("", (user("hello"),))


class Upstream:
    """Replies queued in order (then plain answers); every request is counted by model."""

    def __init__(self) -> None:
        self.queue: list[httpx.Response | Exception] = []
        self.calls: list[str] = []

    def handler(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.calls.append(body.get("model", ""))
        item = self.queue.pop(0) if self.queue else answer()
        if isinstance(item, Exception):
            raise item
        return item


def answer(text: str = "fine", headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(200, json={"choices": [{"message": {"content": text}, "finish_reason": "stop"}],
                                     "usage": {"prompt_tokens": 5, "completion_tokens": 2}}, headers=headers)


def failure(status: int, body: dict | None = None, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(status, json=body or {"error": {"message": f"fake {status}"}}, headers=headers)


@pytest.fixture
async def db(home: Path) -> AsyncIterator[Database]:
    async with store_of(home) as database:
        await endpoints.add(database, Endpoint("up", "http://up.test/v1"))
        for alias in ("m1", "m2"):
            await models.register(database, ModelRecord(alias, alias, "up", alias))
        yield database


@pytest.fixture
def upstream() -> Upstream:
    return Upstream()


@pytest.fixture
async def caller(db: Database, upstream: Upstream, home: Path) -> AsyncIterator[ModelCaller]:
    async with httpx.AsyncClient(transport=httpx.MockTransport(upstream.handler)) as client:
        yield ModelCaller(db, KeyStore(home.parent / "config", {}), client, PacingPolicy(backoff=0.01))


async def call(caller: ModelCaller, alias: str = "m1", timeout: float = 10, request: ModelRequest = HELLO):
    return await caller.complete(await models.get(caller.db, alias), request, timeout=timeout)


async def rows(db: Database) -> list[ledger.UsageRow]:
    return sorted(await ledger.rows(db), key=lambda r: r.t)


async def resting(db: Database) -> set[str]:
    return set(await store.resting_aliases(db, time.time()))


async def test_nothing_limits_a_connection_so_nothing_is_registered(caller, db, upstream):
    assert (await call(caller)).text == "fine"
    gate = await store.gate(db, "up", "m1", time.time())
    assert gate is not None and not gate.limited
    assert await store.inflight_count(db) == 0
    [row] = await rows(db)
    assert (row.status, row.attempts, row.tokens_in, row.tokens_out, row.connection) == ("ok", 1, 5, 2, "up")


async def test_a_call_over_the_rpm_is_refused_without_being_sent(caller, db, upstream):
    await store.set_limit(db, "connection", "up", "rpm", 2)
    await call(caller)
    await call(caller, "m2")
    with pytest.raises(RateLimited) as caught:
        await call(caller)
    assert "not sent; paced by the bench" in caught.value.message
    assert "rpm 2 on connection up: 2 requests this minute" in caught.value.message
    assert "try again in" in caught.value.message and 0 < caught.value.retry_after <= 60 + PacingPolicy().slack
    assert upstream.calls == ["m1", "m2"]
    assert [(r.status, r.attempts) for r in await rows(db)] == [("ok", 1), ("ok", 1), ("refused", 0)]
    assert await store.inflight_count(db) == 0, "every admitted call left the in-flight table when it settled"
    assert "m1" in await resting(db), "a paced-out model rests until its window frees"


async def test_a_call_waits_when_the_window_frees_before_its_deadline(caller, db, upstream):
    await store.set_limit(db, "connection", "up", "rpm", 1)
    await ledger.append(db, ledger.UsageRow("m2", "up", "up", "m2", "ok", t=time.time() - 59.7))
    with pytest.raises(RateLimited):  # frees in 0.3 s, but a 1 s deadline leaves no 2 s margin
        await call(caller, timeout=1)
    assert upstream.calls == []
    await store.resume(db, alias="m1")
    assert (await call(caller, timeout=10)).text == "fine"  # the same wait fits a 10 s deadline
    assert upstream.calls == ["m1"]


async def test_a_call_larger_than_a_token_limit_is_refused_for_good(caller, db, upstream):
    await store.set_limit(db, "connection", "up", "tpm", 100)
    with pytest.raises(RateLimited) as caught:
        await call(caller, request=ModelRequest("", (user("x" * 1000),)))
    assert "this call alone is about 275 tokens" in caught.value.message and caught.value.retry_after is None
    assert upstream.calls == []


async def test_tokens_in_and_out_count_against_tpm(caller, db, upstream):
    await store.set_limit(db, "model", "m1", "tpm", 10)
    await call(caller)  # 5 in + 2 out
    with pytest.raises(RateLimited, match="tpm 10 on model m1: 7 tokens this minute"):
        await call(caller, request=ModelRequest("", (user("a question of some length"),)))
    assert (await call(caller, "m2")).text == "fine", "a model's limit counts that model alone"


async def test_a_window_the_provider_reported_is_enforced(caller, db, upstream):
    upstream.queue.append(answer(headers={"x-ratelimit-limit-requests": "10", "x-ratelimit-remaining-requests": "1",
                                          "x-ratelimit-reset-requests": "30s"}))
    await call(caller)
    await call(caller)  # the one request left
    with pytest.raises(RateLimited, match="requests per minute of 10 on model m1 \\(reported by the provider\\)"):
        await call(caller)
    assert await call(caller, "m2"), "the reported window was this model's"
    overview = await limits.overview(db, time.time())
    [up] = overview["connections"]
    [window] = up["windows"]
    assert (window["metric"], window["window"], window["limit"], window["remaining"], window["alias"]) == (
        "requests", "minute", 10, 0, "m1")


async def test_a_429_rests_the_model_for_the_stated_wait(caller, db, upstream):
    upstream.queue.append(failure(429, headers={"retry-after": "120"}))
    with pytest.raises(RateLimited):
        await call(caller)
    assert upstream.calls == ["m1"], "a long stated wait is not retried"
    [rest] = await store.rests(db, time.time())
    assert rest["alias"] == "m1" and time.time() + 100 < rest["rest_until"] < time.time() + 121
    with pytest.raises(RateLimited, match="model m1 is resting after upstream 429"):
        await call(caller)
    assert upstream.calls == ["m1"], "a resting model is not called"


async def test_a_short_rest_is_waited_out_unless_it_ends_past_the_deadline(caller, db, upstream):
    async with db.transaction() as tx:
        await store.rest(tx, "m1", "up", time.time() + 0.2, "upstream 429: brief")
    assert (await call(caller)).text == "fine"
    assert upstream.calls == ["m1"], "a rest shorter than short_wait is waited for, then the call goes out"
    async with db.transaction() as tx:
        await store.rest(tx, "m1", "up", time.time() + 3, "upstream 429: brief")
    with pytest.raises(RateLimited, match="model m1 is resting after upstream 429"):
        await call(caller, timeout=2)
    assert upstream.calls == ["m1"], "a rest ending past the call's deadline is not waited for"


async def test_a_429_with_no_stated_wait_rests_thirty_minutes(caller, db, upstream):
    upstream.queue.append(failure(429))
    with pytest.raises(RateLimited):
        await call(caller)
    [rest] = await store.rests(db, time.time())
    assert time.time() + 1790 < rest["rest_until"] <= time.time() + 1800


async def test_a_wait_over_a_day_is_capped(caller, db, upstream):
    upstream.queue.append(failure(429, {"error": {"message": "Please try again in 72h0m0s"}}))
    with pytest.raises(RateLimited):
        await call(caller)
    [rest] = await store.rests(db, time.time())
    assert rest["rest_until"] <= time.time() + 86400


async def test_a_short_429_is_retried(caller, db, upstream):
    upstream.queue.append(failure(429, headers={"retry-after-ms": "50"}))
    assert (await call(caller)).text == "fine"
    [row] = await rows(db)
    assert (row.status, row.attempts) == ("ok", 2)
    assert await resting(db) == set()


@pytest.mark.parametrize("first", [500, 503, 408, 409, "connect"])
async def test_transient_failures_are_retried(caller, db, upstream, first):
    upstream.queue.append(httpx.ConnectError("refused") if first == "connect" else failure(first))
    assert (await call(caller)).text == "fine"
    assert [(r.status, r.attempts) for r in await rows(db)] == [("ok", 2)]


async def test_a_bad_request_is_not_retried(caller, db, upstream):
    upstream.queue.append(failure(400))
    with pytest.raises(UpstreamFailure):
        await call(caller)
    assert [(r.status, r.attempts) for r in await rows(db)] == [("error", 1)]
    assert await resting(db) == set()


async def test_three_5xx_give_up_and_cool_the_model_down(caller, db, upstream):
    upstream.queue += [failure(500), failure(502), failure(500)]
    with pytest.raises(UpstreamFailure):
        await call(caller)
    assert [(r.status, r.attempts) for r in await rows(db)] == [("error", 3)]
    with pytest.raises(UpstreamFailure, match="not sent: model m1 is resting after upstream 500"):
        await call(caller)
    assert len(upstream.calls) == 3


async def test_retries_never_pass_the_deadline(caller, db, upstream):
    upstream.queue.append(failure(503, headers={"retry-after": "3"}))
    with pytest.raises(UpstreamFailure):
        await call(caller, timeout=2)
    assert upstream.calls == ["m1"]


async def test_a_404_marks_the_model_for_retirement_not_retired(caller, db, upstream):
    upstream.queue.append(failure(404, {"error": {"message": "The model m1 does not exist"}}))
    with pytest.raises(ModelGone):
        await call(caller)
    [pending] = await store.pending_retirements(db)
    assert pending["alias"] == "m1" and "does not exist" in pending["pending_why"]
    assert not (await models.get(db, "m1")).retired
    assert [a["kind"] for a in await store.open_alerts(db)] == ["model_gone"]
    await call(caller)  # it answered after all: no longer pending
    assert await store.pending_retirements(db) == []


async def test_a_refused_key_pauses_the_whole_connection(caller, db, upstream):
    upstream.queue.append(failure(401, {"error": {"message": "Incorrect API key provided"}}))
    with pytest.raises(AuthOrBilling):
        await call(caller)
    with pytest.raises(AuthOrBilling, match="connection up is paused"):
        await call(caller, "m2")
    assert upstream.calls == ["m1"]
    assert await resting(db) == {"m1", "m2"}
    [alert] = await store.open_alerts(db)
    assert (alert["kind"], alert["subject"]) == ("auth", "up")
    await store.resume(db, connection="up")
    assert (await call(caller, "m2")).text == "fine"
    assert await store.open_alerts(db) == []


async def test_an_exhausted_quota_on_a_429_is_billing_not_a_rate_limit(caller, db, upstream):
    upstream.queue.append(failure(429, {"error": {"message": "You exceeded your current quota",
                                                  "type": "insufficient_quota", "code": "insufficient_quota"}}))
    with pytest.raises(AuthOrBilling):
        await call(caller)
    assert (await store.pauses(db, time.time()))["up"]["why"].startswith("billing or quota")
    assert [a["kind"] for a in await store.open_alerts(db)] == ["billing"]


async def test_timeouts_in_a_row_rest_the_model(caller, db, upstream):
    for _ in range(2):
        upstream.queue.append(httpx.ReadTimeout("slow"))
        with pytest.raises(UpstreamTimeout):
            await call(caller)
    assert await resting(db) == set()
    upstream.queue.append(httpx.ReadTimeout("slow"))
    with pytest.raises(UpstreamTimeout):
        await call(caller)
    [rest] = await store.rests(db, time.time())
    assert rest["rest_why"] == "3 timeouts in a row"
    assert [r.status for r in await rows(db)] == ["timeout"] * 3


async def test_a_success_clears_the_strikes(caller, db, upstream):
    for item in (httpx.ReadTimeout("slow"), httpx.ReadTimeout("slow"), answer(), httpx.ReadTimeout("slow")):
        upstream.queue.append(item)
        try:
            await call(caller)
        except UpstreamTimeout:
            pass
    assert await resting(db) == set()


async def test_a_limit_is_learned_from_the_message(caller, db, upstream):
    message = ("Rate limit reached for model `m1` on tokens per minute (TPM): Limit 12000, Used 11000, "
               "Requested 2000. Please try again in 7.5s.")
    upstream.queue.append(failure(429, {"error": {"message": message, "type": "tokens"}}))
    with pytest.raises(RateLimited):
        await call(caller)
    assert await store.limits_for(db, "up", "m1") == [store.UserLimit("model", "m1", "tpm", 12000, "learned")]
    await store.set_limit(db, "model", "m1", "tpm", 50000)
    assert await store.limits_for(db, "up", "m1") == [store.UserLimit("model", "m1", "tpm", 50000, "user")]


def sse(*chunks: dict) -> httpx.Response:
    body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    return httpx.Response(200, content=body.encode(), headers={"content-type": "text/event-stream"})


async def test_a_stream_is_retried_only_before_its_first_event(caller, db, upstream):
    piece = {"choices": [{"delta": {"content": "hi"}, "finish_reason": None}]}
    upstream.queue += [failure(502), sse(piece)]
    builder = AnswerBuilder()
    async for event in caller.stream(await models.get(db, "m1"), HELLO, timeout=10):
        builder.add(event)
    assert builder.answer().text == "hi"
    upstream.queue.append(sse(piece, {"error": {"message": "upstream died"}}))
    with pytest.raises(UpstreamFailure, match="upstream died"):
        async for _ in caller.stream(await models.get(db, "m1"), HELLO, timeout=10):
            pass
    assert [(r.status, r.attempts) for r in await rows(db)] == [("ok", 2), ("error", 1)]


async def test_a_refused_stream_raises_before_its_first_event(caller, db, upstream):
    await store.set_limit(db, "connection", "up", "rpd", 1)
    await call(caller)
    with pytest.raises(RateLimited, match="rpd 1 on connection up"):
        async for _ in caller.stream(await models.get(db, "m2"), HELLO, timeout=10):
            pass
    assert upstream.calls == ["m1"]


async def test_requests_a_month_count_the_calendar_month(caller, db, upstream):
    await store.set_limit(db, "connection", "up", "rpmo", 1)
    await ledger.append(db, ledger.UsageRow("m1", "up", "up", "m1", "ok", t=limits.month_start(time.time()) - 5))
    await call(caller)  # last month's call does not count
    with pytest.raises(RateLimited) as caught:
        await call(caller)
    assert "rpmo 1 on connection up: 1 requests this month" in caught.value.message
    assert caught.value.retry_after == pytest.approx(limits.next_month(time.time()) - time.time(), abs=5)


async def test_a_paused_connection_rests_every_model_on_every_endpoint_it_carries(db) -> None:
    """``resting_aliases``: an endpoint's connection is its own name unless it names a shared one."""
    await endpoints.add(db, Endpoint("east", "http://127.0.0.1:9/v1", connection="acct"))
    await endpoints.add(db, Endpoint("west", "http://127.0.0.1:9/v2", connection="acct"))
    await endpoints.add(db, Endpoint("solo", "http://127.0.0.1:9/v3"))
    for alias, endpoint in (("e1", "east"), ("w1", "west"), ("w2", "west"), ("s1", "solo")):
        await models.register(db, ModelRecord(alias, alias, endpoint, alias))
    now = time.time()
    before = await resting(db)
    async with db.transaction() as tx:
        await store.pause(tx, "acct", now + 60, "refused key")
        await store.pause(tx, "gone", now - 1, "an old pause, over")
    assert await resting(db) == before | {"e1", "w1", "w2"}
    async with db.transaction() as tx:
        await store.pause(tx, "solo", now + 60, "refused key")
        await store.rest(tx, "m1", "up", now + 60, "429")
    assert await resting(db) == before | {"e1", "w1", "w2", "s1", "m1"}
