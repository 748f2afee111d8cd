"""Three server processes on one store (issue 19), as three replicas behind a load balancer: a
hand-set upstream rpm and a gateway key's rpm hold across all three, a verdict written through one
replica is in the record read through another, a route conversation stays on its member whichever
replica takes each turn, a scheduled job runs once, and the dashboard's live feed on one replica
carries what was written through another. Runs on SQLite (one data folder) and on PostgreSQL (the
shared store replicas use)."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import httpx
import pytest

from benchwarmers_mcp.store import routes as route_store
from tests.kits.replicas import (
    RATE_LIMITED,
    ask_everywhere,
    due_now,
    frames,
    job_runs,
    lease_renewed_for,
    limit_fake,
    panels,
    runs_once_finished,
    three_servers,
)
from tests.kits.route import AGAIN, bench, read, seed_members, turn
from tests.kits.seed import seed
from tests.kits.waits import ANSWER

pytestmark = [pytest.mark.e2e, pytest.mark.backends]

RPM = 4


def test_three_replicas_share_one_rpm_and_one_record(home: Path, upstream: str, fake, store_backend: str) -> None:
    seed(home, base_url=upstream, served=["m1", "m2", "m3"], collections={"trio": ["m1", "m2", "m3"]})
    anyio.run(limit_fake, home, RPM)
    with three_servers(home, BENCH_SEAT_TIMEOUT="5") as (one, two, three):
        seats = anyio.run(panels, [one, two, three], 2)
        assert len(seats) == 18
        assert fake.count() == RPM, f"together the three servers sent exactly the per-minute limit ({store_backend})"
        answered = [s for s in seats if s["status"] == "ok"]
        assert len(answered) == RPM

        judged = {s["call"]: i % 2 == 0 for i, s in enumerate(answered)}
        for call, useful in judged.items():  # each verdict through the first replica
            r = httpx.post(one + "/bench/verdict", json={"call": call, "useful": useful}, timeout=ANSWER)
            assert r.status_code == 200 and r.json()["written"] is True, r.text
        call, useful = next(iter(judged.items()))
        again = httpx.post(two + "/bench/verdict", json={"call": call, "useful": useful}, timeout=ANSWER)
        assert again.status_code == 200 and again.json()["written"] is False  # the second replica sees it
        record = httpx.get(three + "/bench/record", params={"collection": "bench/trio"}, timeout=ANSWER)
        assert record.status_code == 200, record.text
        counts = record.json()["aliases"]
        assert sum(a["useful"] for a in counts.values()) == sum(judged.values())
        assert sum(a["judged"] for a in counts.values()) == RPM  # read through the third replica


KEY_RPM = 3
ASKS = 12  # one of each (dialect, server) pair: a cap counted per process would admit 3 x 3


def test_a_gateway_key_admits_exactly_its_rpm_across_three_replicas(home: Path) -> None:
    seed(home, base_url=None, api="simulated", endpoint="sim", served={"sage": "sage"}, collections={"core": ["sage"]})
    with three_servers(home, BENCHWARMERS_REQUIRE_KEYS="1") as bases:
        made = httpx.post(bases[0] + "/api/gateway-key", json={"name": "team", "rpm": KEY_RPM}, timeout=ANSWER)
        assert made.status_code == 200, made.text
        replies = anyio.run(ask_everywhere, bases, made.json()["key"], "bench/core", ASKS)
    assert len(replies) == ASKS and {r.base for r in replies} == set(bases)
    answered = [r for r in replies if r.status == 200]
    refused = [r for r in replies if r.status != 200]
    assert len(answered) == KEY_RPM, f"{len(answered)} admitted in the minute, whichever replica took each"
    assert all("Simulated answer from sage" in r.message for r in answered)
    assert {r.status for r in refused} == {429}
    for r in refused:  # each SDK read the refusal in its own wire shape
        assert r.kind == RATE_LIMITED[r.dialect], r
        assert f"gateway key 'team' is over its cap of {KEY_RPM} requests a minute" in r.message, r


MEMBERS = {"alpha": "alpha", "beta": "beta", "gamma": "gamma"}
SYSTEM = "You are a careful coder."


def test_a_route_conversation_keeps_its_member_whichever_replica_takes_each_turn(home: Path, upstream: str,
                                                                                fake) -> None:
    seed_members(home, upstream, MEMBERS, {"agents": list(MEMBERS)})
    with three_servers(home) as bases, httpx.Client(timeout=ANSWER) as http:
        first = bench(turn(http, bases[0], SYSTEM))
        assert (first["alias"], first["turn"]) == ("alpha", 1), "no record yet: the collection's order decides"
        judged = http.post(bases[0] + "/bench/verdict", json={"call": first["call"], "useful": False}, timeout=ANSWER)
        assert judged.status_code == 200, judged.text
        # from now on a fresh pick, by any replica, puts a conversation on beta or gamma (alpha is rated
        # worst and, for the rotation, the most recently used): only the shared sticky row keeps alpha
        later = [bench(turn(http, bases[n % 3], SYSTEM, *AGAIN * (n - 1))) for n in range(2, 8)]
        fresh = bench(turn(http, bases[2], "You are a different agent."))
    conversation = first["conversation"]
    assert [(t["conversation"], t["alias"], t["turn"], t["call"]) for t in later] == [
        (conversation, "alpha", n, first["call"]) for n in range(2, 8)]
    assert fresh["alias"] != "alpha" and fresh["conversation"] != conversation, "a fresh pick avoids alpha now"
    answered = [c.model for c in fake.calls]
    assert answered == ["alpha"] * 7 + [fresh["alias"]], "alpha's upstream model answered every turn"
    turns = read(home, route_store.turns_of, conversation)
    assert [(t["turn"], t["alias"], t["status"]) for t in turns] == [(n, "alpha", "ok") for n in range(1, 8)]


def test_a_scheduled_job_runs_once_across_three_replicas(home: Path, upstream: str, fake) -> None:
    seed(home, base_url=upstream, served=["m1", "m2"], collections={"duo": ["m1", "m2"]})
    with three_servers(home, BENCH_SCHEDULER_TICK="0.2") as bases:
        anyio.run(due_now, home, "availability")  # after all three are up: they race for the slot
        anyio.run(runs_once_finished, home, "availability")
        lease = anyio.run(lease_renewed_for, home, 1.0)  # some five more ticks of each process
        runs = anyio.run(job_runs, home, "availability")
        overview = httpx.get(bases[2] + "/api/scheduler", timeout=ANSWER).json()
    assert [(r.status, r.trigger) for r in runs] == [("ran", "schedule")], runs
    assert runs[0].detail["probed"] == 2
    assert sorted(c.model for c in fake.calls) == ["m1", "m2"], "one probe per model: the job ran once"
    assert runs[0].owner == lease["owner"] == overview["runner"]["owner"], "the lease holder ran it"


def test_the_live_feed_reaches_a_browser_on_another_replica(home: Path) -> None:
    seed(home, base_url=None, api="simulated", endpoint="sim", served={"sage": "sage", "quill": "quill"},
         collections={"live": ["sage", "quill"]})
    with three_servers(home) as (one, two, _), httpx.Client(timeout=ANSWER) as http, \
            http.stream("GET", two + "/api/events") as stream:
        assert stream.status_code == 200 and stream.headers["content-type"].startswith("text/event-stream")
        heard = frames(stream)
        ready = next(heard)
        assert ready["event"] == "ready", ready  # listening on two before anything is written through one
        reply = http.post(one + "/v1/chat/completions", json={
            "model": "bench/live", "messages": [{"role": "user", "content": "is it live?"}]})
        assert reply.status_code == 200, reply.text
        panel, seat = reply.json()["bench"]["panel"], reply.json()["bench"]["seats"][0]["call"]
        judged = http.post(one + "/bench/verdict", json={"call": seat, "useful": True})
        assert judged.status_code == 200, judged.text
        events = []
        for frame in heard:  # until the verdict arrives, or the stream's 15 s end
            events.append((frame["event"], json.loads(frame["data"])))
            if frame["event"] == "verdict":
                break
    kinds = {(kind, data["subject"]) for kind, data in events}
    assert ("panel", panel) in kinds and ("seat", seat) in kinds, events
    assert events[-1][0] == "verdict" and events[-1][1]["subject"] == seat, events
    assert all(data["id"] > int(ready["id"]) for _, data in events), "each pushed live, after the stream opened"
