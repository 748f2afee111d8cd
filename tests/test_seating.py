"""Issue 2: who sits. Members, retired and vision filters, explorers by exact recency and family."""

from __future__ import annotations

import time

import pytest

from benchwarmers_mcp.engine.seating import seat_panel
from benchwarmers_mcp.errors import NobodySeatable, NoSeatCanSee, TooLarge
from benchwarmers_mcp.messages import Ask, Image, Message, Text, user
from benchwarmers_mcp.store import changes, endpoints, models
from benchwarmers_mcp.store.collections import Collection, GatewaySettings
from benchwarmers_mcp.store.endpoints import Endpoint
from benchwarmers_mcp.store.models import ModelRecord, family_of
from tests.kits.store import store_of

pytestmark = [pytest.mark.anyio, pytest.mark.backends]


@pytest.fixture
async def db(home):
    async with store_of(home) as db:
        await endpoints.add(db, Endpoint("ep", "http://127.0.0.1:9/v1"))
        yield db


async def add(db, alias, served=None, **fields):
    served = served or alias
    return await models.register(db, ModelRecord(alias, served, "ep", family_of(served), **fields))


def text_ask(collection="c", **kw) -> Ask:
    return Ask(collection, (user("hello"),), **kw)


def image_ask() -> Ask:
    return Ask("c", (Message("user", (Text("what is this"), Image("https://h.invalid/a.png"))),))


async def test_retired_members_free_their_seat_and_are_listed(db):
    for a in ("m1", "m2", "x1", "x2", "x3"):
        await add(db, a)
    await models.retire(db, "m2", "gone upstream")
    seating = await seat_panel(db, Collection("c", ("m1", "m2")), text_ask(), GatewaySettings(3, 2))
    assert [s.key for s in seating.seats] == ["member1", "explorer", "explorer2"]
    assert seating.skipped == [{"seat": "member", "alias": "m2", "why": "retired (gone upstream)"}]


async def test_explorers_least_recently_used_by_exact_time_never_same_family(db):
    await add(db, "member", "vendor/llama-3:free")
    await add(db, "same-family", "other/llama-3")
    await add(db, "old", "a/old")
    await add(db, "older", "b/older")
    await add(db, "twin-of-older", "c/older")
    await add(db, "fresh", "d/fresh")
    now = time.time()
    for alias, used in (("old", now - 5), ("older", now - 10), ("fresh", now - 1)):
        await models.set_last_used(db, alias, used)
    seating = await seat_panel(db, Collection("c", ("member",)), text_ask(), GatewaySettings(5, 2))
    explorers = [s.alias for s in seating.seats if s.label != "member"]
    # never used first, then the oldest use; 'same-family' shares the member's family, and only one
    # of the 'older' family may sit
    assert explorers == ["twin-of-older", "old"]


async def test_with_nominates_and_unknown_nominee_is_skipped(db):
    for a in ("m1", "x1", "nominee"):
        await add(db, a)
    await models.update(db, "nominee", ad_hoc=True)
    seating = await seat_panel(db, Collection("c", ("m1",)), text_ask(with_=("nominee", "ghost", "m1")),
                               GatewaySettings(5, 2))
    assert [s.alias for s in seating.seats] == ["m1", "nominee", "x1"]
    assert {"seat": "with", "alias": "ghost", "why": "not registered"} in seating.skipped


async def test_vision_models_sit_only_for_images_and_blind_ones_are_skipped(db):
    await add(db, "reader")
    await add(db, "eyes", role="vision")
    await add(db, "seer", vision=True)
    text = await seat_panel(db, Collection("c", ("reader", "eyes")), text_ask(), GatewaySettings(2, 0))
    assert [s.alias for s in text.seats] == ["reader"]
    assert text.skipped[0]["alias"] == "eyes"
    pictures = await seat_panel(db, Collection("c", ("reader", "eyes")), image_ask(), GatewaySettings(5, 2))
    assert [s.alias for s in pictures.seats] == ["eyes", "seer"]
    assert pictures.shape == "vision"
    assert {"seat": "member", "alias": "reader", "why": "cannot see images"} in pictures.skipped


async def test_no_seat_can_see_and_nobody_seatable(db):
    await add(db, "reader")
    with pytest.raises(NoSeatCanSee):
        await seat_panel(db, Collection("c", ("reader",)), image_ask(), GatewaySettings(5, 2))
    await models.retire(db, "reader", "x")
    with pytest.raises(NobodySeatable):
        await seat_panel(db, Collection("c", ("reader",)), text_ask(), GatewaySettings(5, 2))


async def test_window_too_small_names_the_member(db):
    await add(db, "small", context_window=50)
    await add(db, "unknown-window")
    big = Ask("c", (user("x" * 1000),))
    with pytest.raises(TooLarge, match=r"small \(50 tokens\)"):
        await seat_panel(db, Collection("c", ("small", "unknown-window")), big, GatewaySettings(5, 2))
    ok = await seat_panel(db, Collection("c", ("unknown-window",)), big, GatewaySettings(5, 2))
    assert "small" not in [s.alias for s in ok.seats], "explorers are filtered on the same estimate"


async def test_resting_models_are_not_explorers(db):
    for a in ("m1", "tired", "ready"):
        await add(db, a)
    seating = await seat_panel(db, Collection("c", ("m1",)), text_ask(), GatewaySettings(2, 1), {"tired"})
    assert [s.alias for s in seating.seats] == ["m1", "ready"]


async def test_every_edit_lands_in_the_change_log(db):
    await add(db, "logged")
    await models.retire(db, "logged", "test")
    await endpoints.remove(db, "ep")
    rows = await changes.history(db)
    assert [(r.what, r.subject) for r in rows] == [
        ("endpoint.save", "ep"), ("model.register", "logged"), ("model.retire", "logged"), ("endpoint.remove", "ep")]
