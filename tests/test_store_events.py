"""The live feed: an event row commits with the row it announces (seat, panel, verdict, change,
alert, route turn) and never without it; the per-process Feed replays from an id, then follows
live; a listener that falls behind is dropped (it comes back with its id), one too far behind is
told to reload; old rows are pruned, never the newest (so ids never repeat)."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest

from benchwarmers_mcp.context import Access
from benchwarmers_mcp.store import Database, calls, routes, verdicts
from benchwarmers_mcp.store import collections as collection_store
from benchwarmers_mcp.store import events as event_store
from benchwarmers_mcp.store import limits as limit_store
from benchwarmers_mcp.store.collections import Collection, GatewaySettings
from benchwarmers_mcp.store.events import Feed
from benchwarmers_mcp.store.verdicts import Verdict
from tests.kits.store import store_of

pytestmark = [pytest.mark.anyio, pytest.mark.backends]


async def a_panel(db: Database) -> str:
    panel = calls.PanelRecord(calls.new_panel_id(), time.time(), "bench/core", "general", "default", "all", "local",
                              None, "the prompt", [])
    await calls.create_panel(db, panel)
    await calls.record_seat(db, calls.SeatRecord(f"{panel.id}.member1", panel.id, "member1", "member", "alpha", "ok",
                                                 0.5, "an answer"))
    return panel.id


async def test_each_write_brings_its_event_in_the_same_statement(home: Path) -> None:
    async with store_of(home) as db:
        panel = await a_panel(db)
        await verdicts.record(db, Verdict(f"{panel}.member1", True), access=Access.unscoped())
        await collection_store.save_gateway_settings(db, GatewaySettings(4, 1))
        async with db.transaction() as tx:
            await limit_store.raise_alert(tx, "auth", "groq", "the key was refused")
        await routes.record_turn(db, routes.TurnRecord("r1", 1, "ok", 1.0, alias="alpha"))
        got = [(e.kind, e.subject, e.ref) for e in await event_store.after(db, 0)]
    assert got == [("panel", panel, "bench/core"), ("seat", f"{panel}.member1", panel),
                   ("verdict", f"{panel}.member1", ""), ("change", "gateway", "settings.gateway"),
                   ("alert", "groq", "auth"), ("route", "r1", "alpha")]


async def test_no_event_outlives_a_rolled_back_write(home: Path) -> None:
    async with store_of(home) as db:
        with pytest.raises(RuntimeError):
            async with db.transaction() as tx:
                await limit_store.raise_alert(tx, "auth", "groq", "refused")
                raise RuntimeError("the rest of the transaction failed")
        with pytest.raises(Exception):  # noqa: B017 - an unknown member: the save is refused whole
            await collection_store.save(db, Collection("core", ("nobody",)))
        assert await event_store.after(db, 0) == []


async def test_the_feed_replays_then_follows_and_never_repeats(home: Path) -> None:
    async with store_of(home) as db, Feed(db, interval=0.02) as feed, \
            anyio.create_task_group() as tg:
        tg.start_soon(feed.run)
        first = await a_panel(db)
        async with feed.subscribe(0) as sub:
            replayed = await sub.next(2)
            assert [e.kind for e in replayed] == ["panel", "seat"]
            second = await a_panel(db)
            live = []
            while len(live) < 2:
                batch = await sub.next(2)
                assert batch
                live += batch
            assert [e.subject for e in live] == [second, f"{second}.member1"]
            assert await sub.next(0.1) == []  # nothing more, nothing twice
        async with feed.subscribe() as fresh:  # from now: none of the past
            assert fresh.cursor == await feed.head()
            assert await fresh.next(0.1) == []
        assert feed.listeners == 0 and first != second
        tg.cancel_scope.cancel()


async def test_a_listener_that_falls_behind_is_dropped_and_one_far_behind_reloads(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(event_store, "QUEUE", 2)
    monkeypatch.setattr(event_store, "REPLAY_LIMIT", 3)
    async with store_of(home) as db, Feed(db, interval=0.01) as feed:
        async with feed.subscribe() as slow:
            for _ in range(3):
                slow.offer([event_store.Event(10, 0.0, "seat", "x", "")])
            assert await slow.next(0.5) is not None  # what was queued is still read out
            assert await slow.next(0.5) is None  # then the stream ends: the browser resumes from its id
        for _ in range(3):
            await a_panel(db)  # six events
        async with feed.subscribe(0) as behind:
            assert behind.reset and behind.cursor == await feed.head()


async def test_closing_the_feed_ends_every_listener_and_takes_no_more(home: Path) -> None:
    async with store_of(home) as db, Feed(db, interval=0.01) as feed, anyio.create_task_group() as tg:
        tg.start_soon(feed.run)
        async with feed.subscribe() as sub:
            ended: list[object] = []

            async def listen() -> None:
                ended.append(await sub.next(None))  # waits with no timeout: only the close ends it

            async with anyio.create_task_group() as listening:
                listening.start_soon(listen)
                await anyio.sleep(0.05)
                assert feed.listeners == 1
                feed.close()
            assert ended == [None] and feed.listeners == 0
        await a_panel(db)
        async with feed.subscribe(0) as late:  # a listener after the close hears nothing, not even the past
            assert await late.next(None) is None and feed.listeners == 0
        tg.cancel_scope.cancel()


async def test_old_events_are_pruned(home: Path) -> None:
    async with store_of(home) as db:
        await a_panel(db)
        assert await event_store.prune(db, time.time() - 60) == 0
        assert await event_store.prune(db, time.time() + 60) == 1  # the newest row stays
        assert [e.id for e in await event_store.after(db, 0)] == [2]
        await a_panel(db)
        assert [e.id for e in await event_store.after(db, 0)] == [2, 3, 4]  # ids never come back
