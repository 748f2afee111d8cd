"""Who may take a route turn and in which order: the filters and their refusals, ranking by useful
verdicts (panel seats and route calls alike), resting members last, the rotation, the sticky key
and the output budget cut to a member's limit."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from benchwarmers_mcp.context import Access
from benchwarmers_mcp.engine import ranking
from benchwarmers_mcp.engine.route import member_request, sticky_key
from benchwarmers_mcp.errors import BadRequest, NobodySeatable, TooLarge
from benchwarmers_mcp.messages import Ask, Image, Message, Text, Tool, user
from benchwarmers_mcp.store import Database, endpoints, limits, models, verdicts
from benchwarmers_mcp.store import routes as route_store
from benchwarmers_mcp.store.calls import PanelRecord, SeatRecord, create_panel, record_seat
from benchwarmers_mcp.store.collections import Collection
from benchwarmers_mcp.store.endpoints import Endpoint
from benchwarmers_mcp.store.models import ModelRecord
from benchwarmers_mcp.store.verdicts import Verdict
from tests.kits.store import store_of

pytestmark = [pytest.mark.anyio, pytest.mark.backends]
TOOL = Tool("run", "run a command", {"type": "object", "properties": {"cmd": {"type": "string"}}})
PIXEL = "data:image/png;base64,iVBORw0KGgo="


@pytest.fixture
async def db(home: Path):
    async with store_of(home) as database:
        await endpoints.add(database, Endpoint("up", "http://127.0.0.1:9/v1"))
        await endpoints.add(database, Endpoint("native", "http://127.0.0.1:9", api="anthropic"))
        yield database


async def add(db: Database, alias: str, **fields) -> ModelRecord:
    fields.setdefault("tools", True)
    return await models.register(db, ModelRecord(alias, alias, fields.pop("endpoint", "up"), alias, **fields))


def ask(*, tools: bool = True, images: bool = False, text: str = "fix it") -> Ask:
    parts = (Text(text), Image(PIXEL)) if images else (Text(text),)
    return Ask("c", (Message("user", parts),), system="agent", tools=(TOOL,) if tools else ())


async def test_members_left_out_and_why(db: Database) -> None:
    await add(db, "good")
    await add(db, "old")
    await models.retire(db, "old", "answers nothing")
    await add(db, "adhoc", ad_hoc=True)
    await add(db, "eyes", role="vision", vision=True)
    await add(db, "claude", endpoint="native")
    await add(db, "notools", tools=False)
    await add(db, "unsure", tools=None)
    await add(db, "blind", vision=None)
    await add(db, "small", context_window=10)
    members = ("good", "old", "adhoc", "eyes", "claude", "notools", "unsure", "blind", "small", "ghost")
    line = await ranking.lineup(db, Collection("c", members), ask())
    assert [m.alias for m in line.eligible] == ["good", "unsure", "blind"]
    assert line.later == {"unsure"}  # unknown is not "cannot": it takes the turn after the known ones
    why = {s["alias"]: s["why"] for s in line.skipped}
    assert why["old"].startswith("retired") and why["adhoc"].startswith("ad hoc")
    assert "no images" in why["eyes"] and "anthropic" in why["claude"] and "tools" in why["notools"]
    assert "context window 10" in why["small"] and why["ghost"] == "not registered"
    with_images = await ranking.lineup(db, Collection("c", ("good", "blind", "eyes")), ask(images=True))
    assert [m.alias for m in with_images.eligible] == ["eyes"]


async def test_refusals(db: Database) -> None:
    await add(db, "small", context_window=10)
    await add(db, "tiny", context_window=20)
    await add(db, "notools", tools=False)
    with pytest.raises(NobodySeatable):
        await ranking.lineup(db, Collection("c", ()), ask())
    with pytest.raises(TooLarge, match="small"):
        await ranking.lineup(db, Collection("c", ("small", "tiny")), ask())
    with pytest.raises(BadRequest, match="notools"):
        await ranking.lineup(db, Collection("c", ("small", "notools")), ask())
    assert [m.alias for m in (await ranking.lineup(db, Collection("c", ("notools",)), ask(tools=False))).eligible] == [
        "notools"]


async def test_tools_count_toward_the_window(db: Database) -> None:
    await add(db, "snug", context_window=10)
    assert (await ranking.lineup(db, Collection("c", ("snug",)), ask(tools=False, text="x"))).eligible
    with pytest.raises(TooLarge):
        await ranking.lineup(db, Collection("c", ("snug",)), ask(tools=True, text="x"))


async def test_useful_verdicts_rank_first_from_panels_and_routes(db: Database) -> None:
    a, b, c = await add(db, "a"), await add(db, "b"), await add(db, "c")
    assert [m.alias for m in await ranking.rank(db, [a, b, c])] == ["a", "b", "c"]
    await create_panel(db, PanelRecord("p1", time.time(), "bench/c", "general", "default", "all", "local", None,
                                       "q", []))
    await record_seat(db, SeatRecord("p1.member3", "p1", "member3", "member", "c", "ok", 1.0, "answer"))
    await verdicts.record(db, Verdict("p1.member3", True), access=Access.unscoped())
    claim = await route_store.claim_turn(db, "key", "bench/c", "local", idle_lapse=60)
    call_b = await route_store.assign_member(db, claim.conversation.id, "b", "bench/c")
    await verdicts.record(db, Verdict(call_b, True), access=Access.unscoped())
    await verdicts.record(db, Verdict(f"{claim.conversation.id}.1", True, note="twice counts once"),
                          access=Access.unscoped())
    assert await ranking.record_scores(db, ["a", "b", "c"]) == {"a": 0, "b": 1, "c": 1}
    b, c = await models.get(db, "b"), await models.get(db, "c")
    assert [m.alias for m in await ranking.rank(db, [a, b, c])] == ["b", "c", "a"]
    assert [m.alias for m in await ranking.rank(db, [a, b, c], resting={"b"})] == ["c", "a", "b"]
    assert [m.alias for m in await ranking.rank(db, [a, b, c], rotate=True)] == ["a", "b", "c"], \
        "the rotation leads with the least recently used (never used: a)"
    assert [m.alias for m in await ranking.rank(db, [a, b, c], rotate=True, resting={"a"})][0] == "c"


async def test_the_suite_hook_breaks_ties(db: Database) -> None:
    a, b = await add(db, "a"), await add(db, "b")

    async def findings(aliases: list[str]) -> dict[str, int]:
        return {"b": 3}

    assert [m.alias for m in await ranking.rank(db, [a, b], suite=findings)] == ["b", "a"]


def test_sticky_key() -> None:
    base = Ask("core", (user("first"), Message("assistant", (Text("ok"),)), user("second")), system="sys")
    later = Ask("core", (user("first"), Message("assistant", (Text("ok"),)), user("third")), system="sys")
    assert sticky_key(base) == sticky_key(later) and len(sticky_key(base)) == 24
    assert sticky_key(base) != sticky_key(Ask("core", base.messages, system="other"))
    assert sticky_key(base) != sticky_key(Ask("core", base.messages, system="sys", key_name="team"))
    assert sticky_key(base) != sticky_key(Ask("other", base.messages, system="sys"))
    assert sticky_key(base, "s1") == sticky_key(Ask("core", later.messages, system="changed"), "s1")
    assert sticky_key(base, "s1") != sticky_key(base, "s2")


def test_output_budget_is_cut_to_the_members_limit() -> None:
    member = ModelRecord("m", "m", "up", "m", max_output=4096)
    sent = Ask("c", (user("x"),), options={"max_tokens": 32_000, "max_completion_tokens": 9000, "temperature": 0.1})
    assert member_request(sent, member).options == {"max_tokens": 4096, "max_completion_tokens": 4096,
                                                    "temperature": 0.1}
    unknown = ModelRecord("u", "u", "up", "u")
    assert member_request(sent, unknown).options["max_tokens"] == 32_000


async def test_a_claim_takes_the_conversations_member_when_it_is_usable(db: Database) -> None:
    """The usual sticky turn: the claim's own commit takes the member (its call id, its last use);
    a member that may not take the turn (resting, gone from the collection) is left to the failover."""
    await add(db, "a")
    await add(db, "b")
    first = await route_store.claim_turn(db, "key", "bench/c", "local", idle_lapse=60, eligible={"a", "b"})
    assert first.new and first.call is None, "a new conversation has no member yet"
    call_a = await route_store.assign_member(db, first.conversation.id, "a", "bench/c")
    await models.set_last_used(db, "a", 1.0)
    now = time.time()
    second = await route_store.claim_turn(db, "key", "bench/c", "local", idle_lapse=60, eligible={"a"}, now=now)
    assert (second.turn, second.conversation.alias, second.call) == (2, "a", call_a)
    assert (await models.get(db, "a")).last_used == now
    assert not second.member_rests
    third = await route_store.claim_turn(db, "key", "bench/c", "local", idle_lapse=60, eligible={"b"}, now=now + 1)
    assert (third.turn, third.call) == (3, None)
    assert (await models.get(db, "a")).last_used == now, "a member the turn may not use is not taken"
    async with db.transaction() as tx:  # eligible, but resting after a rate limit: read in the claim itself
        await limits.rest(tx, "a", "up", now + 60, "rate limited")
    fourth = await route_store.claim_turn(db, "key", "bench/c", "local", idle_lapse=60, eligible={"a"}, now=now + 2)
    assert (fourth.turn, fourth.call, fourth.member_rests) == (4, None, True)
    assert (await models.get(db, "a")).last_used == now, "a resting member is not taken"
    async with db.transaction() as tx:  # its rest over, its connection paused: resting all the same
        await limits.rest(tx, "a", "up", now, "over")
        await limits.pause(tx, "up", now + 60, "billing")
    fifth = await route_store.claim_turn(db, "key", "bench/c", "local", idle_lapse=60, eligible={"a"}, now=now + 3)
    assert (fifth.call, fifth.member_rests) == (None, True)
    async with db.transaction() as tx:
        await limits.pause(tx, "up", now, "over")
    sixth = await route_store.claim_turn(db, "key", "bench/c", "local", idle_lapse=60, eligible={"a"}, now=now + 4)
    assert (sixth.call, sixth.member_rests) == (call_a, False), "awake again: taken"
