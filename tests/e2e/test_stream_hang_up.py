"""An agent that hangs up on a streamed route turn, against ``benchwarmers serve`` itself (uvicorn,
httptools): the stream's own listener hears the disconnect, the member's call is stopped at once
and the turn is recorded as cancelled, long before the member would have finished."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from benchwarmers_mcp.store import ledger, routes
from tests.kits.route import read, seed_members
from tests.kits.servers import spawn_server

pytestmark = pytest.mark.e2e

STALL = 30  # seconds the member stalls after its first piece: the test must not wait for it


def test_a_hang_up_mid_stream_stops_the_member_on_a_real_server(home: Path, upstream: str) -> None:
    seed_members(home, upstream, {"drip": f"drip?pause={STALL}"}, {"drip": ["drip"]})
    with spawn_server(home) as base:
        body = {"model": "bench/drip:route", "stream": True, "messages": [{"role": "user", "content": "go"}]}
        hung_up = time.monotonic()
        with httpx.Client(timeout=60) as http, http.stream("POST", base + "/v1/chat/completions", json=body) as r:
            assert r.status_code == 200
            assert any("answer from drip" in line for line in r.iter_lines()), "the first piece came"
            hung_up = time.monotonic()
        turns: list[dict[str, object]] = []
        while not turns and time.monotonic() < hung_up + STALL / 2:
            time.sleep(0.05)
            turns = read(home, routes.turns_of)
    assert [t["status"] for t in turns] == ["cancelled"], "recorded once the agent hung up, not when the member ended"
    assert [(r.status, r.purpose) for r in read(home, ledger.in_order)] == [("cancelled", "route")]
