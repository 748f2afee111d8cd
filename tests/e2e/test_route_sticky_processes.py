"""Stickiness across processes: a conversation stays on its member across a restart and across two
server processes on one data folder."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.kits.route import AGAIN, bench, seed_members, turn
from tests.kits.servers import spawn_server
from tests.kits.waits import ANSWER

pytestmark = pytest.mark.e2e


def test_a_conversation_keeps_its_member_across_processes_and_a_restart(home: Path, upstream: str) -> None:
    with httpx.Client(timeout=ANSWER) as http:
        seed_members(home, upstream, {"alpha": "alpha", "beta": "beta"}, {"agents": ["alpha", "beta"]})
        with spawn_server(home) as first:
            one = bench(turn(http, first, "You are a careful coder."))
            assert one["alias"] == "alpha", "no record yet: the collection's order decides"
            panel = http.post(first + "/v1/chat/completions", timeout=ANSWER, json={
                "model": "bench/agents:all", "messages": [{"role": "user", "content": "which is better?"}]}).json()
            beta_seat = next(s["call"] for s in panel["bench"]["seats"] if s["alias"] == "beta")
            assert http.post(first + "/bench/verdict", json={"call": beta_seat, "useful": True}).status_code == 200
            with spawn_server(home) as second:
                two = bench(turn(http, second, "You are a careful coder.", *AGAIN))
                assert (two["conversation"], two["alias"], two["turn"]) == (one["conversation"], "alpha", 2)
                fresh = bench(turn(http, second, "You are a different agent."))
                assert fresh["alias"] == "beta", "beta now has the better record"
        with spawn_server(home) as third:
            three = bench(turn(http, third, "You are a careful coder.", *AGAIN, *AGAIN))
        assert (three["conversation"], three["alias"], three["turn"]) == (one["conversation"], "alpha", 3)
        assert three["call"] == one["call"]
