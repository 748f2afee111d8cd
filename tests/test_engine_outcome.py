"""The engine finishes its own results: a panel's seats, usage and merge, and a route turn's
member, answer and usage, are kept by the engine as they happen, whether or not a face listens;
the reply mode is decided in one place; and the ``bench`` object keeps its keys in order."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import anyio.lowlevel
import httpx
import pytest

from benchwarmers_mcp.context import Access, Context
from benchwarmers_mcp.engine import report
from benchwarmers_mcp.engine.collections import reply_mode
from benchwarmers_mcp.engine.panel import MergeDone, SeatDone, start_panel
from benchwarmers_mcp.engine.route import start_turn
from benchwarmers_mcp.messages import (
    Answer,
    Ask,
    Finish,
    ModelRequest,
    StreamEvent,
    TextDelta,
    Usage,
    user,
)
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import Database, endpoints, models, verdicts
from benchwarmers_mcp.store import routes as route_store
from benchwarmers_mcp.store.collections import Collection
from benchwarmers_mcp.store.endpoints import Endpoint
from benchwarmers_mcp.store.models import ModelRecord
from benchwarmers_mcp.upstream.caller import CallInfo
from benchwarmers_mcp.upstream.keys import KeyStore

pytestmark = pytest.mark.anyio
LATENCY = {"a": 0.05, "b": 0.2, "m": 0.1}


@dataclass
class FakeCaller:
    """Stands in for ModelCaller: each alias answers after its latency, with usage it reports."""

    called: list[str] = field(default_factory=list)

    async def complete(self, model: ModelRecord, request: ModelRequest, *, timeout: float,
                       info: CallInfo) -> Answer:
        self.called.append(model.alias)
        await anyio.sleep(LATENCY[model.alias])
        return Answer(f"answer from {model.alias}", usage=Usage(10, len(model.alias)))

    async def stream(self, model: ModelRecord, request: ModelRequest, *, timeout: float,
                     info: CallInfo) -> AsyncIterator[StreamEvent]:
        self.called.append(model.alias)
        for event in (TextDelta("turn "), TextDelta(f"by {model.alias}"), Finish("stop", Usage(7, 3))):
            yield event

    async def held(self, model: ModelRecord, tokens: int, wait: float) -> None:
        return None  # nothing limits these models: none would have to wait


@pytest.fixture
async def ctx(tmp_path: Path, settings: Settings) -> AsyncIterator[Context]:
    async with Database(settings.store_target) as db, httpx.AsyncClient() as client, \
            anyio.create_task_group() as tg:
        await endpoints.add(db, Endpoint("up", "http://127.0.0.1:9/v1"))
        for alias in LATENCY:  # m shares a's family, so it never takes an explorer seat
            await models.register(db, ModelRecord(alias, alias, "up", "a" if alias == "m" else alias))
        yield Context(settings, db, KeyStore(tmp_path, {}), client, FakeCaller(), tg)  # type: ignore[arg-type]
        tg.cancel_scope.cancel()


def ask(reply: str | None = None) -> Ask:
    return Ask("core", (user("which is it?"),), reply=reply)  # type: ignore[arg-type]


async def test_a_panel_nobody_listens_to_is_finished_by_the_engine(ctx: Context) -> None:
    collection = Collection("core", ("a", "b"), merger="m")
    run = await start_panel(ctx, ask(), collection, reply_mode(ask("merged"), collection), access=Access.unscoped())
    await run.finished.wait()  # the engine's own signal: nobody has read a single event
    assert run.reply == "merged"
    assert sorted(s.alias for s in run.seats_done) == ["a", "b"]
    assert run.merge is not None and run.merge.answer == "answer from m"
    assert run.usage == Usage(30, 3), "both seats and the merger, summed by the engine"
    assert run.upstream_seconds >= LATENCY["b"] + LATENCY["m"], "the slowest seat, then the merger"
    every_call = [f"{run.id}.member1", f"{run.id}.member2", f"{run.id}.merger"]
    assert await verdicts.pending(ctx.db, every_call, access=Access.unscoped()) == every_call, "each seat and the merger is in the store"
    assert await run.wait() is run  # a face that only waits (and drops the events)


async def test_a_listener_reads_the_engines_counts_in_finish_order(ctx: Context) -> None:
    collection = Collection("core", ("a", "b"))
    run = await start_panel(ctx, ask(), collection, "all", access=Access.unscoped())
    seen = [event async for event in run.events()]
    assert [(e.record.alias, e.answered) for e in seen if isinstance(e, SeatDone)] == [("a", 1), ("b", 2)]
    assert not any(isinstance(e, MergeDone) for e in seen)
    assert [s.seat for s in run.seats_in_seat_order()] == ["member1", "member2"]
    assert list(report.panel_bench(run)) == ["panel", "collection", "shape", "shape_by", "seats", "verdict", "usage"]


async def test_a_route_turn_keeps_its_own_outcome(ctx: Context) -> None:
    turn = await start_turn(ctx, ask(), Collection("core", ("a",)), access=Access.unscoped(), hold_all=True)
    await turn.ready()
    assert turn.alias == "a" and turn.call, "the engine committed before the face read anything"
    answer = await turn.collect()
    assert answer.text == "turn by a" and turn.answer == answer and turn.usage == Usage(7, 3)
    bench = report.turn_bench(turn)
    assert list(bench) == ["collection", "reply", "conversation", "call", "alias", "turn", "verdict", "usage"]
    assert bench["call"] == turn.call and bench["usage"] == {"input_tokens": 7, "output_tokens": 3}
    (row,) = await route_store.turns_of(ctx.db, turn.conversation)
    assert row["status"] == "ok" and row["alias"] == "a"


async def test_a_whole_turn_run_inline_is_driven_by_ready_and_recorded_before_it_returns(ctx: Context) -> None:
    """``inline``: nothing runs until the face's ``ready()``, which drives the member's call in the
    face's own task and returns with the turn's row written."""
    caller: FakeCaller = ctx.caller  # type: ignore[assignment]
    turn = await start_turn(ctx, ask(), Collection("core", ("a",)), access=Access.unscoped(), hold_all=True,
                            inline=True)
    for _ in range(5):
        await anyio.lowlevel.checkpoint()
    assert caller.called == [] and await route_store.turns_of(ctx.db, turn.conversation) == []
    task = anyio.get_current_task().id
    seen_in: list[int] = []

    async def stream(*args: object, **kwargs: object) -> AsyncIterator[StreamEvent]:
        seen_in.append(anyio.get_current_task().id)
        async for event in FakeCaller.stream(caller, *args, **kwargs):  # type: ignore[arg-type]
            yield event

    caller.stream = stream  # type: ignore[method-assign]
    await turn.ready()
    assert seen_in == [task], "the member was called from the face's own task"
    (row,) = await route_store.turns_of(ctx.db, turn.conversation)
    assert row["status"] == "ok" and row["alias"] == "a"
    assert (await turn.collect()).text == "turn by a"


async def test_a_whole_turn_hands_its_answer_over_whole(ctx: Context) -> None:
    """A whole turn's face takes the answer whole: no event goes through the pipe one by one (each
    was a send, a receive and a builder step per event, a few microseconds a token)."""
    turn = await start_turn(ctx, ask(), Collection("core", ("a",)), access=Access.unscoped(), hold_all=True,
                            inline=True)
    await turn.ready()
    assert turn.over and turn.queued == 0, "the commit was the one item sent"
    assert turn.answer.text == "turn by a" and turn.usage == Usage(7, 3)
    assert (await turn.collect()).text == "turn by a"


async def test_a_streamed_turn_tells_the_face_when_its_next_item_must_be_waited_for(ctx: Context) -> None:
    """``waiting()``: False while items the driver sent are untaken, or once the driver is done."""
    turn = await start_turn(ctx, ask(), Collection("core", ("a",)), access=Access.unscoped())
    assert turn.waiting(), "nothing sent yet, and the driver is on"
    await turn.ready()
    for _ in range(100):  # the driver finishes on its own, with nobody reading
        if turn.over:
            break
        await anyio.lowlevel.checkpoint()
    assert turn.queued == 3 and not turn.waiting(), "three events after the commit, all still there"
    seen = [event async for event in turn.events()]
    assert [type(e).__name__ for e in seen] == ["TextDelta", "TextDelta", "Finish"]
    assert turn.queued == 0 and not turn.waiting()


async def test_a_streamed_turn_hands_over_its_commit_before_the_rest_and_the_bookkeeping(ctx: Context) -> None:
    """A member whose whole answer is at hand at once (one read): the face is let in at the commit,
    so its 200 and first frames go before the driver relays the rest and writes the turn's row."""
    turn = await start_turn(ctx, ask(), Collection("core", ("a",)), access=Access.unscoped())
    await turn.ready(5.0)
    assert turn.alias == "a" and not turn.over, "the face has the commit while the driver is still on"
    # the driver stopped at the commit: the first piece is there, the rest not relayed, the row not
    # written (it is written in the same step that ends the driver, ``over``); checked without an
    # await, since any await of the face's (a store read) lets the driver finish
    assert turn.queued == 1, "the first piece alone: the rest and the row come after the first frames"
    seen = [event async for event in turn.events()]
    assert [type(e).__name__ for e in seen] == ["TextDelta", "TextDelta", "Finish"]
    (row,) = await route_store.turns_of(ctx.db, turn.conversation)
    assert row["status"] == "ok", "the row is written before the events end"


async def test_the_reply_mode_is_decided_in_one_place() -> None:
    merged, route = Collection("core", ("a",), reply="merged"), Collection("core", ("a",), reply="route")
    assert reply_mode(ask(), merged) == "merged", "the collection's own mode"
    assert reply_mode(ask("all"), merged) == "all", "the request's mode first"
    assert reply_mode(ask(), Collection("core", ("a",), reply="")) == "all"
    assert reply_mode(ask(), route) == "route"
    assert reply_mode(ask(), route, can_route=False) == "all", "a face that cannot route gets a panel"
    assert reply_mode(ask("merged"), route, can_route=False) == "merged"
