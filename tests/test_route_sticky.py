"""Stickiness (across processes and a restart: tests/e2e/test_route_sticky_processes.py): a
conversation with another system prompt (or another agent session) is its own and may land
elsewhere; a turn its member cannot take is re-ranked and the new member keeps it."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import anyio
import httpx

from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import limits as limit_store
from benchwarmers_mcp.store import routes
from tests.kits.loopback import Loopback
from tests.kits.route import AGAIN, FAST, bench, read, route_server, seed_members, turn
from tests.kits.store import store_of

PIXEL = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


def test_another_system_prompt_or_session_is_another_conversation(settings: Settings, home: Path,
                                                                   upstream: str, net: Loopback, http: httpx.Client) -> None:
    seed_members(home, upstream, {"alpha": "alpha", "beta": "beta"}, {"agents": ["alpha", "beta"]})
    always_rotate = replace(FAST, rotation=0.25, chance=lambda: 0.0)
    with route_server(net, settings, always_rotate) as base:
        main = bench(turn(http, base, "You are the main agent."))
        side = bench(turn(http, base, "You write titles."))
        assert side["conversation"] != main["conversation"]
        assert (main["alias"], side["alias"]) == ("alpha", "beta"), "rotation gives the new one the stalest member"
        again = bench(turn(http, base, "You are the main agent.", *AGAIN))
        assert (again["conversation"], again["alias"]) == (main["conversation"], "alpha")

        first = bench(turn(http, base, "You are the main agent.", session="s-1"))
        same = bench(turn(http, base, "You are the main agent, now with a new reminder.", *AGAIN, session="s-1"))
        other = bench(turn(http, base, "You are the main agent.", session="s-2"))
        assert first["conversation"] == same["conversation"], "a session id outlasts a changing system text"
        assert len({main["conversation"], first["conversation"], other["conversation"]}) == 3

        codex = bench(turn(http, base, "You are Codex.", session="c-1", session_header="session-id"))
        later = bench(turn(http, base, "You are Codex, with a new reminder.", *AGAIN, session="c-1",
                           session_header="session-id"))
        assert codex["conversation"] == later["conversation"], "Codex's session-id header keeps its conversation"
        assert codex["conversation"] not in {main["conversation"], first["conversation"], other["conversation"]}


def test_a_turn_its_member_cannot_take_moves_the_conversation(settings: Settings, home: Path,
                                                               upstream: str, net: Loopback, http: httpx.Client) -> None:
    seed_members(home, upstream, {"blind": "blind"}, {}, vision=None)
    seed_members(home, upstream, {"seer": "seer"}, {"agents": ["blind", "seer"]}, vision=True, endpoint="fake2")
    with route_server(net, settings) as base:
        one = bench(turn(http, base, "You look at screenshots."))
        assert one["alias"] == "blind"
        picture = {"role": "user", "content": [{"type": "text", "text": "what is this?"},
                                               {"type": "image_url", "image_url": {"url": PIXEL}}]}
        two = bench(turn(http, base, "You look at screenshots.", {"role": "assistant", "content": "ok"}, picture))
        assert (two["conversation"], two["alias"]) == (one["conversation"], "seer")
        assert two["skipped"] == [{"alias": "blind", "why": "cannot see images"}]
        assert two["call"] == f"{one['conversation']}.2", "a second member gets the conversation's next call id"
    assert [c.alias for c in read(home, routes.conversations)] == ["seer"]
    assert [c.alias for c in read(home, routes.member_calls)] == ["blind", "seer"]


def test_resting_members_go_last(settings: Settings, home: Path, upstream: str, net: Loopback, http: httpx.Client) -> None:
    seed_members(home, upstream, {"alpha": "alpha", "beta": "beta"}, {"agents": ["alpha", "beta"]})

    async def rest_alpha() -> None:  # as a rate limit would: in the store, for every process to see
        async with store_of(home) as db:
            connection = (await limit_store.model_connections(db))["alpha"]
            async with db.transaction() as tx:
                await limit_store.rest(tx, "alpha", connection, time.time() + 3600, "upstream 429")

    anyio.run(rest_alpha)
    with route_server(net, settings) as base:
        assert bench(turn(http, base, "You are rested."))["alias"] == "beta"
