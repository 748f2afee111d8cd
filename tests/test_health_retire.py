"""Issue 16.2 and 16.3 through the store and the caller: the deprecations job retires exactly by
the rules (with its confirming call and the connection guard), keeps the evidence, records the
collections a model left, and a restore puts everything back; every alert kind is raised and cleared."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from benchwarmers_mcp.admin.models import restore_model
from benchwarmers_mcp.health import retire
from benchwarmers_mcp.health.probes import Prober
from benchwarmers_mcp.store import alerts as alert_store
from benchwarmers_mcp.store import collections, models
from benchwarmers_mcp.store import health as health_store
from benchwarmers_mcp.store import limits as limit_store
from benchwarmers_mcp.store.collections import Collection
from tests.kits.health import DAY, ManualClock, Scripted, failure, health_ctx, seat

pytestmark = pytest.mark.anyio
GONE = failure(404, "The model m1 does not exist")


async def open_kinds(db, subject: str | None = None) -> set[tuple[str, str]]:
    return {(a.kind, a.subject) for a in await alert_store.open_alerts(db, dismissed=True)
            if subject is None or a.subject == subject}


async def probe_all(ctx, clock, *aliases: str, kind: str = "availability") -> None:
    for alias in aliases:
        await Prober(ctx).probe(await models.get(ctx.db, alias), kind)


def listing(*names: str) -> dict[str, list[str]]:
    return {"up.test": list(names)}


async def test_a_confirmed_structural_failure_retires_at_once_and_a_restore_puts_it_back(home: Path) -> None:
    upstream = Scripted(always={"m1": GONE}, listing=listing("m1", "m2"))
    clock = ManualClock()
    async with health_ctx(home, upstream, clock) as ctx:
        await seat(ctx.db, "up", "m1", "m2")
        await collections.save(ctx.db, Collection("core", ("m1", "m2")))
        await probe_all(ctx, clock, "m1", "m2")
        await clock.advance(3600)
        report = await retire.deprecations(ctx)
        assert [r["alias"] for r in report["retired"]] == ["m1"] and upstream.count("m1") == 2  # probe + confirm
        m1 = await models.get(ctx.db, "m1")
        assert m1.retired and "confirmed" in (m1.retired_why or "")
        assert (await collections.get(ctx.db, "core")).members == ("m2",)
        last = await models.last_retirement(ctx.db, "m1")
        assert last and last["by"] == "auto" and last["collections"] == ["core"] and last["rule"] == "confirmed"
        assert len(await health_store.probes(ctx.db, alias="m1")) == 2  # the evidence is kept
        assert ("retired", "m1") in await open_kinds(ctx.db)

        record, back = await restore_model(ctx, "m1")
        assert not record.retired and back == ["core"]
        assert (await collections.get(ctx.db, "core")).members == ("m2", "m1")
        assert ("retired", "m1") not in await open_kinds(ctx.db)
        await clock.advance(3600)
        again = await retire.deprecations(ctx)  # the old failures are before the restore
        assert again["retired"] == [] and upstream.count("m1") == 2


async def test_a_confirming_call_that_answers_keeps_the_model(home: Path) -> None:
    upstream = Scripted(queues={"m1": [GONE]}, listing=listing("m1", "m2"))
    clock = ManualClock()
    async with health_ctx(home, upstream, clock) as ctx:
        await seat(ctx.db, "up", "m1", "m2")
        await probe_all(ctx, clock, "m1", "m2")
        await clock.advance(3600)
        report = await retire.deprecations(ctx)
        assert report["retired"] == [] and report["answered_confirmation"] == ["m1"]
        assert not (await models.get(ctx.db, "m1")).retired
        assert await open_kinds(ctx.db, "m1") == set()


PAYWALLED = failure(402, "This model requires a paid plan: add credits to use it")


async def test_a_paywalled_failure_is_confirmed_past_the_pause_it_caused_and_retires(home: Path) -> None:
    """A 402 pauses its whole connection for an hour; the confirming call is still sent, and a
    witness on the same connection that answers says the model (not the account) went paid."""
    upstream = Scripted(always={"m1": PAYWALLED}, listing=listing("m1", "m2"))
    clock = ManualClock()
    async with health_ctx(home, upstream, clock) as ctx:
        await seat(ctx.db, "up", "m1", "m2")
        await probe_all(ctx, clock, "m2", "m1")  # m2 answers; m1's 402 pauses the connection
        await probe_all(ctx, clock, "m2")  # not sent: the connection is paused
        refused = (await health_store.probes(ctx.db, alias="m2"))[0]
        assert refused.refused == 1 and refused.failure == "capacity" and upstream.count("m2") == 1
        await clock.advance(600)
        report = await retire.deprecations(ctx)
        assert [(r["alias"], r["rule"]) for r in report["retired"]] == [("m1", "confirmed")], report
        assert upstream.count("m1") == 2 and upstream.count("m2") == 2  # the confirmation and the witness, sent
        assert report["held"] == {} and not (await models.get(ctx.db, "m2")).retired
        assert "confirmed by a second call" in ((await models.get(ctx.db, "m1")).retired_why or "")


async def test_an_account_out_of_credit_holds_the_connection_instead(home: Path) -> None:
    upstream = Scripted(queues={"m2": [httpx.Response(200, json={"choices": [{"message": {"content": "ready"},
                                                                              "finish_reason": "stop"}]})]},
                        always={"m1": PAYWALLED, "m2": PAYWALLED}, listing=listing("m1", "m2"))
    clock = ManualClock()
    async with health_ctx(home, upstream, clock) as ctx:
        await seat(ctx.db, "up", "m1", "m2")
        await probe_all(ctx, clock, "m2", "m1", "m2")  # m2 answered once; then m1's 402 paused the connection
        await clock.advance(600)
        report = await retire.deprecations(ctx)
        assert report["retired"] == [] and report["held"] == {"up": ["m1", "m2"]}
        assert upstream.count("m1") == 2 and upstream.count("m2") == 2  # the witness failed the same way
        held = await alert_store.open_of(ctx.db, "connection_held", "up")
        assert held and held.detail["models"] == ["m1", "m2"] and held.detail["endpoint"] == "up"
        assert not any([(await models.get(ctx.db, a)).retired for a in ("m1", "m2")])


@pytest.mark.parametrize("trouble", ["rate limit", "timeout", "sign-in"])
async def test_never_retired_for_rate_limits_timeouts_or_sign_in(home: Path, trouble: str) -> None:
    reply = {"rate limit": failure(429, "slow down"), "timeout": httpx.ReadTimeout("slow"),
             "sign-in": failure(401, "invalid api key")}[trouble]
    upstream = Scripted(always={"m1": reply}, listing=listing("m1", "m2"))
    clock = ManualClock()
    async with health_ctx(home, upstream, clock) as ctx:
        await seat(ctx.db, "up", "m1")
        await seat(ctx.db, "up2", "m2", base="http://up.test/v1")
        for _ in range(10):
            await probe_all(ctx, clock, "m1", "m2")
            await limit_store.resume(ctx.db, connection="up")  # a paused key is retried daily
            await limit_store.resume(ctx.db, alias="m1")
            await clock.advance(3600)
            report = await retire.deprecations(ctx)
            assert report["retired"] == [] and report["watching"] == []
            await clock.advance(DAY - 3600)
        rows = await health_store.probes(ctx.db, alias="m1")
        assert len(rows) == 10 and {r.failure for r in rows} <= {"capacity", "timeout", "signin"}
        assert not (await models.get(ctx.db, "m1")).retired


async def test_missing_from_the_listing_three_days_retires_with_a_registration_alert_first(home: Path) -> None:
    upstream = Scripted(listing=listing("m2", "m1-v2"))
    clock = ManualClock()
    async with health_ctx(home, upstream, clock) as ctx:
        await seat(ctx.db, "up", "m1", "m2")
        await probe_all(ctx, clock, "m2")
        await retire.deprecations(ctx)
        registration = await alert_store.open_of(ctx.db, "registration", "m1")
        assert registration and "no longer lists m1" in registration.message and "m1-v2" in registration.message
        retiring = await alert_store.open_of(ctx.db, "retiring", "m1")
        assert retiring and "in 3 days" in retiring.message
        for day in (1, 2):
            await clock.advance(DAY)
            await probe_all(ctx, clock, "m2")
            report = await retire.deprecations(ctx)
            assert report["retired"] == [], day
        refreshed = await alert_store.open_of(ctx.db, "retiring", "m1")
        assert refreshed and refreshed.id == retiring.id and "tomorrow" in refreshed.message
        await clock.advance(DAY)
        await probe_all(ctx, clock, "m2")
        report = await retire.deprecations(ctx)
        assert [(r["alias"], r["rule"]) for r in report["retired"]] == [("m1", "missing")]
        assert await open_kinds(ctx.db, "m1") == {("retired", "m1")}


async def test_a_registration_alert_clears_when_the_listing_names_it_again(home: Path) -> None:
    upstream = Scripted(listing=listing("m2"))
    clock = ManualClock()
    async with health_ctx(home, upstream, clock) as ctx:
        await seat(ctx.db, "up", "m1", "m2")
        await retire.deprecations(ctx)
        assert ("registration", "m1") in await open_kinds(ctx.db)
        upstream.listing = listing("m1", "m2")
        await clock.advance(DAY)
        await retire.deprecations(ctx)
        assert await open_kinds(ctx.db, "m1") == set()


async def test_the_connection_guard_holds_and_retire_all_answers_it(home: Path) -> None:
    upstream = Scripted(always={"m1": GONE, "m2": failure(404, "no such model m2")}, listing=listing("m1", "m2"))
    clock = ManualClock()
    async with health_ctx(home, upstream, clock) as ctx:
        await seat(ctx.db, "up", "m1", "m2")
        await probe_all(ctx, clock, "m1", "m2")
        await clock.advance(3600)
        report = await retire.deprecations(ctx)
        assert report["retired"] == [] and report["held"] == {"up": ["m1", "m2"]}
        assert upstream.count("m1") == 1  # no confirming call on a held connection
        held = await alert_store.open_of(ctx.db, "connection_held", "up")
        assert held and "m1, m2" in held.message
        assert await retire.retire_all(ctx, "up") == ["m1", "m2"]
        assert [(await models.get(ctx.db, a)).retired for a in ("m1", "m2")] == [True, True]
        assert await alert_store.open_of(ctx.db, "connection_held", "up") is None


async def test_a_hold_clears_when_one_of_its_models_answers(home: Path) -> None:
    upstream = Scripted(queues={"m1": [GONE], "m2": [GONE]}, listing=listing("m1", "m2"))
    clock = ManualClock()
    async with health_ctx(home, upstream, clock) as ctx:
        await seat(ctx.db, "up", "m1", "m2")
        await probe_all(ctx, clock, "m1", "m2")
        await retire.deprecations(ctx)
        assert ("connection_held", "up") in await open_kinds(ctx.db)
        await probe_all(ctx, clock, "m2", kind="retry")
        assert ("connection_held", "up") not in await open_kinds(ctx.db)


async def test_a_retiring_alert_is_raised_refreshed_and_cleared_by_an_answer(home: Path) -> None:
    upstream = Scripted(queues={"m1": [failure(500, "boom")]}, listing=listing("m1", "m2"))
    clock = ManualClock()
    async with health_ctx(home, upstream, clock) as ctx:
        await seat(ctx.db, "up", "m1", "m2")
        await probe_all(ctx, clock, "m1", "m2")
        await retire.deprecations(ctx)
        alert = await alert_store.open_of(ctx.db, "retiring", "m1")
        assert alert and "unless it answers" in alert.message and alert.detail["days"] == 2
        await limit_store.resume(ctx.db, alias="m1")  # the 500's cool-down, over
        await probe_all(ctx, clock, "m1", kind="retry")
        assert await alert_store.open_of(ctx.db, "retiring", "m1") is None


async def test_went_paid_is_raised_once_refreshed_and_cleared(home: Path) -> None:
    async with health_ctx(home, Scripted(), ManualClock()) as ctx:
        await seat(ctx.db, "up", "m1")
        first = await alert_store.raise_went_paid(ctx.db, "m1", price_in=0.1, price_out=0.4, source="models.dev")
        again = await alert_store.raise_went_paid(ctx.db, "m1", price_in=0.2, price_out=0.8)
        assert first == again
        [alert] = await alert_store.open_alerts(ctx.db)
        assert alert.kind == "went_paid" and "$0.2 / $0.8" in alert.message and alert.refreshed_at is not None
        assert await alert_store.clear_went_paid(ctx.db, "m1") == 1
        assert await alert_store.open_alerts(ctx.db) == []


async def test_a_dismissed_alert_is_not_shown_nor_raised_again_while_open(home: Path) -> None:
    async with health_ctx(home, Scripted(), ManualClock()) as ctx:
        await seat(ctx.db, "up", "m1")
        alert_id = await alert_store.raise_went_paid(ctx.db, "m1", price_in=1.0)
        assert await alert_store.dismiss(ctx.db, alert_id)
        assert await alert_store.open_alerts(ctx.db) == []
        assert await alert_store.raise_went_paid(ctx.db, "m1", price_in=1.0) == alert_id
        assert await alert_store.open_alerts(ctx.db) == []
        assert [a.id for a in await alert_store.open_alerts(ctx.db, dismissed=True)] == [alert_id]
