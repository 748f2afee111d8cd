"""Configuration kept per process (``store/config_version.py``), on both backends: two stores on one
database stand for two processes. A change through one, by the admin store functions, is seen by
the other on its next read; what every call writes (a model's ``last_used``, facts and limits learned
again unchanged) leaves the stamp alone; a transaction that rolls back leaves nothing kept behind
it, even when a later commit follows; a kept read costs one statement; and what is handed out is
the caller's to change."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest

from benchwarmers_mcp.errors import NotFound
from benchwarmers_mcp.store import Database, collections, config_version, endpoints, limits, models, ratings
from benchwarmers_mcp.store import routes as route_store
from benchwarmers_mcp.store.collections import Collection, GatewaySettings
from benchwarmers_mcp.store.endpoints import Endpoint
from benchwarmers_mcp.store.ledger import UsageRow
from benchwarmers_mcp.store.models import ModelRecord
from benchwarmers_mcp.store.ratings import LearningSettings
from tests.kits.store import Statements, store_of

pytestmark = [pytest.mark.anyio, pytest.mark.backends]


async def bench(db: Database) -> None:
    await endpoints.add(db, Endpoint("up", "http://127.0.0.1:9/v1", headers={"x-team": "a"}))
    await models.register(db, ModelRecord("m1", "vendor/m1", "up", "", context_window=8000,
                                          options={"reasoning": {"effort": "low"}}))
    await models.register(db, ModelRecord("m2", "vendor/m2", "up", ""))
    await collections.save(db, Collection("trio", ("m1", "m2"), description="two"))


@pytest.fixture
async def pair(home: Path) -> AsyncIterator[tuple[Database, Database]]:
    """Two stores on one database (two processes' worth): the first sets the bench up."""
    async with store_of(home) as a, store_of(home) as b:
        await bench(a)
        yield a, b


def reads(db: Database) -> dict[str, Callable[[], Awaitable[Any]]]:
    """Every kept read, by name."""
    return {
        "endpoints": lambda: endpoints.list_all(db),
        "models": lambda: models.list_all(db),
        "collection": lambda: collections.get(db, "trio"),
        "collections": lambda: collections.list_all(db),
        "gateway": lambda: collections.gateway_settings(db),
        "learning": lambda: ratings.learning_settings(db),
        "gate": lambda: limits.gate(db, "up", "m1", time.time()),
    }


async def warm(db: Database) -> None:
    for read in reads(db).values():
        await read()


async def test_a_kept_read_costs_one_statement_until_something_changes(pair: tuple[Database, Database]) -> None:
    a, b = pair
    count = Statements(b)
    for name, read in reads(b).items():
        first, value = await count.cost(read())
        again, same = await count.cost(read())
        assert again == 1, (name, count.sql[-again:])
        assert first >= 2, name  # the stamp, then the table
        assert same == value, name
    await models.update(a, "m2", role="code")  # any change: every kept read reads its table again
    for name, read in reads(b).items():
        n, _ = await count.cost(read())
        assert n >= 2, name


async def test_a_change_through_one_store_is_seen_by_the_other(pair: tuple[Database, Database]) -> None:
    a, b = pair
    await warm(b)

    await endpoints.add(a, Endpoint("up", "http://127.0.0.1:10/v1", headers={"x-team": "b"}))
    assert [(e.base_url, e.headers) for e in await endpoints.list_all(b)] == [("http://127.0.0.1:10/v1", {"x-team": "b"})]
    gate = await limits.gate(b, "up", "m1", time.time())
    assert gate is not None and gate.endpoint.base_url == "http://127.0.0.1:10/v1" and not gate.limited
    await endpoints.add(a, Endpoint("side", "http://127.0.0.1:11/v1", connection="shared"))
    assert [e.name for e in await endpoints.list_all(b)] == ["side", "up"]

    await models.register(a, ModelRecord("m3", "vendor/m3", "side", ""))
    assert [m.alias for m in await models.list_all(b)] == ["m1", "m2", "m3"]
    await models.update(a, "m3", role="code", tools=True, options={"temperature": 0.2})
    m3 = {m.alias: m for m in await models.list_all(b)}["m3"]
    assert (m3.role, m3.tools, m3.options) == ("code", True, {"temperature": 0.2})
    await models.retire(a, "m3", "too slow")
    assert [m.alias for m in await models.list_all(b, include_retired=False)] == ["m1", "m2"]
    await models.restore(a, "m3")
    assert [m.alias for m in await models.list_all(b, include_retired=False)] == ["m1", "m2", "m3"]

    await collections.save(a, Collection("trio", ("m2", "m3"), description="three"))
    assert (await collections.get(b, "trio")).members == ("m2", "m3")
    await collections.save(a, Collection("solo", ("m1",)))
    assert [c.name for c in await collections.list_all(b)] == ["solo", "trio"]
    await models.retire(a, "m2", "gone", leave_collections=True)  # out of its collections too
    assert (await collections.get(b, "trio")).members == ("m3",)
    await collections.delete(a, "solo")
    with pytest.raises(NotFound):
        await collections.get(b, "solo")
    assert [c.name for c in await collections.list_all(b)] == ["trio"]

    await collections.save_gateway_settings(a, GatewaySettings(max_calls=4, max_explorers=1))
    assert await collections.gateway_settings(b) == GatewaySettings(max_calls=4, max_explorers=1)
    await ratings.save_learning_settings(a, LearningSettings(auto=True, shadow=("trio",), explore="thompson"))
    assert await ratings.learning_settings(b) == LearningSettings(True, ("trio",), "thompson")

    await limits.set_limit(a, "model", "m1", "rpm", 5)
    gate = await limits.gate(b, "up", "m1", time.time())
    assert gate is not None and gate.limited
    await limits.set_limit(a, "model", "m1", "rpm", None)
    gate = await limits.gate(b, "up", "m1", time.time())
    assert gate is not None and not gate.limited
    await limits.set_limit(a, "connection", "up", "rpd", 100)
    gate = await limits.gate(b, "up", "m1", time.time())
    assert gate is not None and gate.limited

    await endpoints.remove(a, "side")
    assert [e.name for e in await endpoints.list_all(b)] == ["up"]
    assert await limits.gate(b, "side", "m3", time.time()) is None


async def test_what_every_call_writes_leaves_the_stamp_alone(pair: tuple[Database, Database]) -> None:
    a, b = pair
    await limits.set_limit(a, "model", "m1", "rpm", 60)
    async with a.transaction() as tx:
        await limits.learn_limit(tx, "model", "m1", "rpm", 30)
    await warm(b)
    count = Statements(b)
    stamp, changes = await config_version.stamp(a), await config_version.count(a)

    now = time.time()
    await route_store.assign_member(a, "conv-1", "m1", "bench/trio", now=now)  # a route turn's own write
    await models.set_last_used(a, "m2", now - 5)
    async with a.transaction() as tx:
        await limits.learn_limit(tx, "model", "m1", "rpm", 30)  # learned again, no tighter
        await limits.learn_facts(tx, "m1", [("context_window", 4000, "a reply said so")])  # the user's 8000 wins
    gate = await limits.gate(a, "up", "m1", now)
    assert gate is not None
    await limits.settle(a, limits.Settlement(UsageRow("m1", "up", "up", "vendor/m1", "ok", t=now)))

    assert (await config_version.stamp(a), await config_version.count(a)) == (stamp, changes)
    n, listed = await count.cost(models.list_all(b))
    assert n == 1
    used = {m.alias: m.last_used for m in listed}
    assert used["m1"] == pytest.approx(now) and used["m2"] == pytest.approx(now - 5)  # read live, not kept
    assert {m.alias: m.context_window for m in listed}["m1"] == 8000
    await models.set_last_used(a, "m2", None)  # back in the queue: never used
    assert {m.alias: m.last_used for m in await models.list_all(b)}["m2"] is None

    await models.update(a, "m1", context_window=16000)  # and a real change does bump it
    assert await config_version.count(a) == changes + 1 and await config_version.stamp(a) != stamp
    assert {m.alias: m.context_window for m in await models.list_all(b)}["m1"] == 16000


class Undo(Exception):
    pass


async def test_a_rolled_back_transaction_leaves_nothing_kept(pair: tuple[Database, Database]) -> None:
    a, b = pair
    await warm(a)
    with pytest.raises(Undo):
        async with a.transaction() as tx:
            await limits.learn_facts(tx, "m2", [("context_window", 2000, "a reply said so")])
            # a read from the task holding the transaction runs inside it and sees its change
            assert {m.alias: m.context_window for m in await models.list_all(a)}["m2"] == 2000
            raise Undo
    # then as many committed changes as it made, before this store reads again: what it read inside
    # the transaction must never come back (a counter would be back where the transaction left it)
    await models.update(b, "m1", role="code")
    listed = {m.alias: m for m in await models.list_all(a)}
    assert listed["m2"].context_window is None and listed["m1"].role == "code"

    with pytest.raises(Undo):
        async with a.transaction() as tx:
            await limits.learn_limit(tx, "model", "m1", "rpm", 3)
            gate = await limits.gate(a, "up", "m1", time.time())
            assert gate is not None and gate.limited
            raise Undo
    await models.update(b, "m1", role="general")
    gate = await limits.gate(a, "up", "m1", time.time())
    assert gate is not None and not gate.limited
    assert {m.alias: m.role for m in await models.list_all(a)}["m1"] == "general"


async def test_what_is_handed_out_is_the_callers_to_change(pair: tuple[Database, Database]) -> None:
    _, b = pair
    for _ in range(2):  # the read that fills, then a kept one
        listed = await endpoints.list_all(b)
        listed[0].headers["x-team"] = "mine"
        m1 = (await models.list_all(b))[0]
        m1.options["reasoning"]["effort"] = "high"
        gate = await limits.gate(b, "up", "m1", time.time())
        assert gate is not None
        gate.endpoint.headers["x-extra"] = "1"
    assert (await endpoints.list_all(b))[0].headers == {"x-team": "a"}
    assert (await models.list_all(b))[0].options == {"reasoning": {"effort": "low"}}
    gate = await limits.gate(b, "up", "m1", time.time())
    assert gate is not None and gate.endpoint.headers == {"x-team": "a"}


async def test_every_column_of_a_watched_table_is_watched_or_written_per_call(pair: tuple[Database, Database]) -> None:
    a, _ = pair
    await collections.save_gateway_settings(a, GatewaySettings())
    await limits.set_limit(a, "model", "m1", "rpm", 60)
    assert await config_version.unwatched(a) == {}


async def test_reads_in_a_shared_scope_share_one_stamp_read(pair: tuple[Database, Database]) -> None:
    a, b = pair
    await warm(b)
    count = Statements(b)
    late: list[Collection] = []
    async with anyio.create_task_group() as tg:
        with config_version.shared(b):
            n, _ = await count.cost(collections.get(b, "trio"))
            assert n == 1  # the stamp, once
            for name in ("endpoints", "collection", "collections", "gateway", "learning"):
                n, _ = await count.cost(reads(b)[name]())
                assert n == 0, name
            await collections.save(a, Collection("trio", ("m1",)))
            # a snapshot: the change is the next request's
            assert (await collections.get(b, "trio")).members == ("m1", "m2")
            over = anyio.Event()

            async def later() -> None:  # started inside, reads after the scope: its own stamp
                await over.wait()
                late.append(await collections.get(b, "trio"))

            tg.start_soon(later)
        over.set()
    assert late[0].members == ("m1",)
    assert (await collections.get(b, "trio")).members == ("m1",)


async def test_a_route_turns_members_are_read_alone_with_their_last_use_live(pair: tuple[Database, Database]) -> None:
    """``models.of``: records for the asked aliases alone (what a route turn's lineup needs, however
    many models the bench has), with no last use (a turn reads it live, ``models.last_used``, only
    to rotate): one statement once kept, the stamp, and none inside a request's shared stamp."""
    a, b = pair
    await models.register(a, ModelRecord("m3", "vendor/m3", "up", ""))
    await models.retire(a, "m3", "too slow")
    count = Statements(b)
    found = await models.of(b, ["m2", "m3", "nope", "m2"])
    assert list(found) == ["m2", "m3"], "the asked order, unknown aliases left out, retired ones kept"
    everyone = {m.alias: m for m in await models.list_all(b)}
    assert found == {"m2": replace(everyone["m2"], last_used=None), "m3": replace(everyone["m3"], last_used=None)}
    n, again = await count.cost(models.of(b, ["m1"]))
    assert n == 1 and list(again) == ["m1"]
    assert await models.of(b, []) == {}
    with config_version.shared(b):
        await endpoints.apis(b)  # the request's first kept read: the stamp
        n, again = await count.cost(models.of(b, ["m1", "m2"]))
    assert n == 0 and list(again) == ["m1", "m2"], "a request's shared stamp covers them"

    claim = await route_store.claim_turn(a, "sticky", "bench/trio", "local", idle_lapse=3600)
    await route_store.assign_member(a, claim.conversation.id, "m1", "bench/trio", now=1234.5)
    assert await models.last_used(b, ["m1", "nope"]) == {"m1": 1234.5}, "a use is not a change: read live"
    assert (await models.of(b, ["m1"]))["m1"].last_used is None
    await models.update(a, "m1", role="code")
    assert (await models.of(b, ["m1"]))["m1"].role == "code", "a change through another store is seen"
    (await models.of(b, ["m1"]))["m1"].options["reasoning"]["effort"] = "high"
    assert (await models.of(b, ["m1"]))["m1"].options == {"reasoning": {"effort": "low"}}, "the caller's to change"


async def test_each_endpoints_api_is_read_from_the_kept_endpoints(pair: tuple[Database, Database]) -> None:
    a, b = pair
    count = Statements(b)
    assert await endpoints.apis(b) == {"up": "chat"}
    n, _ = await count.cost(endpoints.apis(b))
    assert n == 1
    await endpoints.add(a, Endpoint("side", "http://127.0.0.1:11/v1", api="anthropic"))
    assert await endpoints.apis(b) == {"side": "anthropic", "up": "chat"}
