"""The route engine with members scripted as event streams (no HTTP): reasoning counts as a first
token but is held back with the answer, a reasoning-only answer fails over, a whole turn fails
over even part way, and the last member's empty answer stands."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import httpx
import pytest

from benchwarmers_mcp.context import Access, Context
from benchwarmers_mcp.engine.route import RouteTuning, start_turn
from benchwarmers_mcp.errors import UpstreamFailure
from benchwarmers_mcp.messages import (
    Ask,
    Finish,
    ModelRequest,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    Usage,
    user,
)
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import Database, endpoints, models
from benchwarmers_mcp.store import routes as route_store
from benchwarmers_mcp.store.collections import Collection
from benchwarmers_mcp.store.endpoints import Endpoint
from benchwarmers_mcp.store.models import ModelRecord
from benchwarmers_mcp.upstream.caller import CallInfo
from benchwarmers_mcp.upstream.keys import KeyStore

pytestmark = pytest.mark.anyio
LOCAL = Access.unscoped()
Script = list[StreamEvent | Exception | float]  # a float is a pause, an exception is raised there


@dataclass
class ScriptedCaller:
    """Stands in for ModelCaller: each alias streams its script."""

    scripts: dict[str, Script]
    seen: list[tuple[str, CallInfo]] = field(default_factory=list)

    async def stream(self, model: ModelRecord, request: ModelRequest, *, timeout: float,
                     info: CallInfo) -> AsyncIterator[StreamEvent]:
        self.seen.append((model.alias, info))
        for step in self.scripts[model.alias]:
            if isinstance(step, float):
                await anyio.sleep(step)
            elif isinstance(step, Exception):
                raise step
            else:
                yield step


@pytest.fixture
async def make(tmp_path: Path, settings: Settings):
    async with Database(settings.store_target) as db, httpx.AsyncClient() as client, \
            anyio.create_task_group() as tg:
        await endpoints.add(db, Endpoint("up", "http://127.0.0.1:9/v1"))
        for alias in ("a", "b", "c"):
            await models.register(db, ModelRecord(alias, alias, "up", alias, tools=True))

        def context(scripts: dict[str, Script]) -> Context:
            return Context(settings, db, KeyStore(tmp_path, {}), client, ScriptedCaller(scripts), tg,
                           route_tuning=RouteTuning(first_token=0.5, rotation=0.0))

        yield context, db


def ask(stream: bool = True, system: str = "agent") -> Ask:
    return Ask("team", (user("do it"),), system=system, stream=stream)


async def events_of(ctx: Context, *, hold_all: bool = False) -> tuple[list[StreamEvent], object]:
    turn = await start_turn(ctx, ask(), Collection("team", ("a", "b", "c")), access=LOCAL, hold_all=hold_all)
    await turn.ready()
    return [e async for e in turn.events() if e is not None], turn


async def test_reasoning_is_held_back_with_the_answer_and_counts_as_a_first_token(make) -> None:
    context, db = make
    ctx = context({"a": [ReasoningDelta("thinking"), 0.8, TextDelta("done"), Finish("stop", Usage(5, 2))]})
    events, turn = await events_of(ctx)
    assert events[:2] == [ReasoningDelta("thinking"), TextDelta("done")]
    assert turn.alias == "a" and turn.usage == Usage(5, 2) and not turn.failed_over


async def test_a_reasoning_only_answer_fails_over(make) -> None:
    context, db = make
    ctx = context({"a": [ReasoningDelta("hmm"), TextDelta("  "), Finish()], "b": [TextDelta("yes"), Finish()]})
    events, turn = await events_of(ctx)
    assert turn.alias == "b" and [f["alias"] for f in turn.failed_over] == ["a"]
    assert "answered nothing" in turn.failed_over[0]["error"]
    assert events[0] == TextDelta("yes"), "the failed member's reasoning never reaches the agent"
    assert [info.purpose for _, info in ctx.caller.seen] == ["route", "route"]


async def test_a_tool_call_alone_is_an_answer(make) -> None:
    context, db = make
    ctx = context({"a": [ToolCallDelta(0, "call_1", "run", '{"x"'), ToolCallDelta(0, arguments=": 1}"),
                         Finish("tool_calls")]})
    answer = await (await start_turn(ctx, ask(False), Collection("team", ("a",)), access=LOCAL,
                                     hold_all=True)).collect()
    assert answer.tool_calls[0].arguments == '{"x": 1}' and answer.finish_reason == "tool_calls"


async def test_a_whole_turn_fails_over_part_way_but_a_stream_cannot(make) -> None:
    context, db = make
    scripts: dict[str, Script] = {"a": [TextDelta("half"), UpstreamFailure("died")], "b": [TextDelta("all"), Finish()]}
    _, whole = await events_of(context(scripts), hold_all=True)
    assert whole.alias == "b"
    turn = await start_turn(context(scripts), ask(system="another conversation"), Collection("team", ("a", "b")),
                            access=LOCAL)
    await turn.ready()
    seen = []
    with pytest.raises(UpstreamFailure, match="died"):
        async for event in turn.events():
            seen.append(event)
    assert seen == [TextDelta("half")] and turn.alias == "a"
    rows = await route_store.turns_of(db, turn.conversation)
    assert [(r["alias"], r["status"]) for r in rows] == [("a", "error")]


async def test_the_last_members_empty_answer_stands(make) -> None:
    context, db = make
    ctx = context({"a": [Finish()], "b": [Finish()], "c": [ReasoningDelta("..."), Finish()]})
    events, turn = await events_of(ctx)
    assert turn.alias == "c" and [f["alias"] for f in turn.failed_over] == ["a", "b"]
    assert events == [ReasoningDelta("..."), Finish()]
    (row,) = await route_store.turns_of(db, turn.conversation)
    assert row["status"] == "empty" and [t["alias"] for t in row["tried"]] == ["a", "b"]


def test_route_timings_come_from_settings(tmp_path) -> None:
    from types import SimpleNamespace

    from benchwarmers_mcp.engine.route import tuning
    from benchwarmers_mcp.settings import Settings

    settings = Settings.from_env({"BENCH_ROUTE_FIRST_TOKEN": "12.5", "BENCH_ROUTE_TURN_TIMEOUT": "120"},
                                 home=tmp_path, config_dir=tmp_path)
    tune = tuning(SimpleNamespace(settings=settings, route_tuning=None))
    assert (tune.first_token, tune.turn_timeout, tune.stream_wait) == (12.5, 120.0, 15.0)
