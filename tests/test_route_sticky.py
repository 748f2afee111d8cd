"""Stickiness: a conversation stays on its member across a restart and across processes on one
data folder; a conversation with another system prompt (or another agent session) is its own and
may land elsewhere; a turn its member cannot take is re-ranked and the new member keeps it."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import anyio
import httpx
import pytest

from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import Database, routes
from benchwarmers_mcp.store import limits as limit_store
from tests.servers import spawn_server
from tests.test_route_kit import FAST, read, route_server, seed_members

PIXEL = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


def turn(base: str, system: str, *later: dict, session: str | None = None) -> httpx.Response:
    messages = [{"role": "system", "content": system}, {"role": "user", "content": "refactor the parser"}, *later]
    headers = {"x-claude-code-session-id": session} if session else {}
    response = httpx.post(base + "/v1/chat/completions", headers=headers, timeout=30,
                          json={"model": "bench/agents:route", "messages": messages})
    assert response.status_code == 200, response.text
    return response


def bench(response: httpx.Response) -> dict:
    return response.json()["bench"]


AGAIN = ({"role": "assistant", "content": "done"}, {"role": "user", "content": "and the tests"})


@pytest.mark.e2e
def test_a_conversation_keeps_its_member_across_processes_and_a_restart(home: Path, upstream: str) -> None:
    seed_members(home, upstream, {"alpha": "alpha", "beta": "beta"}, {"agents": ["alpha", "beta"]})
    with spawn_server(home) as first:
        one = bench(turn(first, "You are a careful coder."))
        assert one["alias"] == "alpha", "no record yet: the collection's order decides"
        panel = httpx.post(first + "/v1/chat/completions", timeout=30, json={
            "model": "bench/agents:all", "messages": [{"role": "user", "content": "which is better?"}]}).json()
        beta_seat = next(s["call"] for s in panel["bench"]["seats"] if s["alias"] == "beta")
        assert httpx.post(first + "/bench/verdict", json={"call": beta_seat, "useful": True}).status_code == 200
        with spawn_server(home) as second:
            two = bench(turn(second, "You are a careful coder.", *AGAIN))
            assert (two["conversation"], two["alias"], two["turn"]) == (one["conversation"], "alpha", 2)
            fresh = bench(turn(second, "You are a different agent."))
            assert fresh["alias"] == "beta", "beta now has the better record"
    with spawn_server(home) as third:
        three = bench(turn(third, "You are a careful coder.", *AGAIN, *AGAIN))
    assert (three["conversation"], three["alias"], three["turn"]) == (one["conversation"], "alpha", 3)
    assert three["call"] == one["call"]


def test_another_system_prompt_or_session_is_another_conversation(settings: Settings, home: Path,
                                                                   upstream: str) -> None:
    seed_members(home, upstream, {"alpha": "alpha", "beta": "beta"}, {"agents": ["alpha", "beta"]})
    always_rotate = replace(FAST, rotation=0.25, chance=lambda: 0.0)
    with route_server(settings, always_rotate) as base:
        main = bench(turn(base, "You are the main agent."))
        side = bench(turn(base, "You write titles."))
        assert side["conversation"] != main["conversation"]
        assert (main["alias"], side["alias"]) == ("alpha", "beta"), "rotation gives the new one the stalest member"
        again = bench(turn(base, "You are the main agent.", *AGAIN))
        assert (again["conversation"], again["alias"]) == (main["conversation"], "alpha")

        first = bench(turn(base, "You are the main agent.", session="s-1"))
        same = bench(turn(base, "You are the main agent, now with a new reminder.", *AGAIN, session="s-1"))
        other = bench(turn(base, "You are the main agent.", session="s-2"))
        assert first["conversation"] == same["conversation"], "a session id outlasts a changing system text"
        assert len({main["conversation"], first["conversation"], other["conversation"]}) == 3


def test_a_turn_its_member_cannot_take_moves_the_conversation(settings: Settings, home: Path,
                                                               upstream: str) -> None:
    seed_members(home, upstream, {"blind": "blind"}, {}, vision=None)
    seed_members(home, upstream, {"seer": "seer"}, {"agents": ["blind", "seer"]}, vision=True, endpoint="fake2")
    with route_server(settings) as base:
        one = bench(turn(base, "You look at screenshots."))
        assert one["alias"] == "blind"
        picture = {"role": "user", "content": [{"type": "text", "text": "what is this?"},
                                               {"type": "image_url", "image_url": {"url": PIXEL}}]}
        two = bench(turn(base, "You look at screenshots.", {"role": "assistant", "content": "ok"}, picture))
        assert (two["conversation"], two["alias"]) == (one["conversation"], "seer")
        assert two["skipped"] == [{"alias": "blind", "why": "cannot see images"}]
        assert two["call"] == f"{one['conversation']}.2", "a second member gets the conversation's next call id"
    assert [c.alias for c in read(home, routes.conversations)] == ["seer"]
    assert [c.alias for c in read(home, routes.member_calls)] == ["blind", "seer"]


def test_resting_members_go_last(settings: Settings, home: Path, upstream: str) -> None:
    seed_members(home, upstream, {"alpha": "alpha", "beta": "beta"}, {"agents": ["alpha", "beta"]})

    async def rest_alpha() -> None:  # as a rate limit would: in the store, for every process to see
        async with Database(home / "benchwarmers.db") as db:
            connection = (await limit_store.model_connections(db))["alpha"]
            async with db.transaction() as tx:
                await limit_store.rest(tx, "alpha", connection, time.time() + 3600, "upstream 429")

    anyio.run(rest_alpha)
    with route_server(settings) as base:
        assert bench(turn(base, "You are rested."))["alias"] == "beta"
