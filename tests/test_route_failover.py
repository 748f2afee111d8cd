"""Failover before the first byte reaches the agent: a rate-limited, a silent and an empty member
hand the turn to the next one; 429 when every member tried was rate limited, else 502; after the
first byte an error goes into the stream."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import httpx
import openai
import pytest

from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import ledger, routes
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.loopback import Loopback
from tests.kits.route import FAST, read, route_server, seed_members

SERVED = {"limited": "bad?fail=429", "limited2": "worse?fail=429", "broken": "bad?fail=500",
          "broken2": "worse?fail=500", "broken3": "worst?fail=503", "silent": "stuck?fail=hang",
          "quiet": "quiet?fail=empty", "cut": "cut?fail=midway", "alpha": "alpha"}
COLLECTIONS = {
    "limited-first": ["limited", "alpha"], "silent-first": ["silent", "alpha"], "quiet-first": ["quiet", "alpha"],
    "all-limited": ["limited", "limited2"], "mixed": ["limited", "broken"], "only-quiet": ["quiet"],
    "four": ["broken", "broken2", "broken3", "alpha"], "cut-first": ["cut", "alpha"],
    "sticky-breaks": ["alpha", "broken", "broken2", "broken3"],
}


@pytest.fixture
def base(settings: Settings, home: Path, upstream: str, net: Loopback):
    seed_members(home, upstream, SERVED, COLLECTIONS)
    with route_server(net, settings) as url:
        yield url


def ask(http: httpx.Client, base: str, collection: str, *, stream: bool = False) -> httpx.Response:
    body = {"model": f"bench/{collection}:route", "stream": stream,
            "messages": [{"role": "system", "content": f"agent for {collection}"},
                         {"role": "user", "content": f"do the thing ({collection}, stream={stream})"}]}
    return http.post(base + "/v1/chat/completions", json=body)


def sse_data(response: httpx.Response) -> list[dict]:
    return [json.loads(line[6:]) for line in response.text.splitlines()
            if line.startswith("data: ") and line != "data: [DONE]"]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(("collection", "failed", "why"), [
    ("limited-first", "limited", "429"), ("silent-first", "silent", "no first token"),
    ("quiet-first", "quiet", "answered nothing")])
def test_a_failing_member_hands_the_turn_on(base: str, fake: FakeUpstream, home: Path, collection: str,
                                            failed: str, why: str, stream: bool, http: httpx.Client) -> None:
    response = ask(http, base, collection, stream=stream)
    assert response.status_code == 200
    assert response.headers["x-bench-model"] == "alpha"
    if stream:
        events = sse_data(response)
        text = "".join(c["choices"][0]["delta"].get("content", "") for c in events if c.get("choices"))
        bench = events[-1]["bench"]
    else:
        text, bench = response.json()["choices"][0]["message"]["content"], response.json()["bench"]
    assert text.startswith("answer from alpha")
    assert bench["alias"] == "alpha" and [f["alias"] for f in bench["failed_over"]] == [failed]
    assert why in bench["failed_over"][0]["error"]
    (turn,) = read(home, routes.turns_of)
    assert (turn["alias"], turn["status"]) == ("alpha", "ok")
    assert [t["alias"] for t in turn["tried"]] == [failed]
    conversation = [c.alias for c in read(home, routes.conversations)]
    assert conversation == ["alpha"], "the member that answered keeps the conversation"


@pytest.mark.parametrize("stream", [False, True])
def test_every_member_rate_limited_is_a_429(base: str, stream: bool, net: Loopback, http: httpx.Client) -> None:
    response = ask(http, base, "all-limited", stream=stream)
    assert response.status_code == 429
    assert response.headers["retry-after"] == "30"
    assert "limited" in response.json()["error"]["message"] and response.json()["error"]["code"] == 429
    with openai.OpenAI(http_client=net.client2(), base_url=base + "/v1", api_key="x", max_retries=0) as oa, pytest.raises(openai.RateLimitError):
        oa.chat.completions.create(model="bench/all-limited:route", messages=[{"role": "user", "content": "hi"}])


def test_a_mix_of_failures_is_a_502_and_at_most_three_are_tried(base: str, fake: FakeUpstream, home: Path, http: httpx.Client) -> None:
    mixed = ask(http, base, "mixed")
    assert mixed.status_code == 502 and "broken" in mixed.json()["error"]["message"]
    four = ask(http, base, "four", stream=True)
    assert four.status_code == 502
    assert fake.count("alpha") == 0, "the fourth member is never tried"
    statuses = [r["status"] for r in read(home, routes.turns_of)]
    assert statuses == ["error", "error"]


def test_a_conversations_member_that_fails_hands_on_to_the_others_ranked_then(base: str, home: Path,
                                                                              http: httpx.Client) -> None:
    """A sticky turn ranks the other members only when its member fails: they still take the turn."""
    assert ask(http, base, "sticky-breaks").headers["x-bench-model"] == "alpha"
    (conversation,) = read(home, routes.conversations)
    read(home, routes.assign_member, conversation.id, "broken", "bench/sticky-breaks")  # now it fails
    again = ask(http, base, "sticky-breaks")
    assert again.status_code == 200 and again.headers["x-bench-model"] == "alpha"
    assert [f["alias"] for f in again.json()["bench"]["failed_over"]] == ["broken"]
    (conversation,) = read(home, routes.conversations)
    assert (conversation.alias, conversation.turns) == ("alpha", 2)


def test_the_last_members_empty_answer_is_its_answer(base: str, home: Path, http: httpx.Client) -> None:
    response = ask(http, base, "only-quiet")
    assert response.status_code == 200 and response.json()["choices"][0]["message"]["content"] == ""
    assert [t["status"] for t in read(home, routes.turns_of)] == ["empty"]


def test_after_the_first_byte_an_error_goes_into_the_stream(base: str, home: Path, net: Loopback, http: httpx.Client) -> None:
    response = ask(http, base, "cut-first", stream=True)
    assert response.status_code == 200 and response.headers["x-bench-model"] == "cut"
    events = sse_data(response)
    assert events[1]["choices"][0]["delta"]["content"] == "The first half"
    assert "died part way" in events[-1]["error"]["message"]
    assert response.text.endswith("data: [DONE]\n\n")
    with openai.OpenAI(http_client=net.client2(), base_url=base + "/v1", api_key="x", max_retries=0) as oa:
        with pytest.raises(openai.APIError, match="died part way"):
            for _ in oa.chat.completions.create(model="bench/cut-first:route", stream=True,
                                                messages=[{"role": "user", "content": "again"}]):
                pass


def test_a_whole_turn_fails_over_even_part_way(base: str, http: httpx.Client) -> None:
    response = ask(http, base, "cut-first")
    assert response.status_code == 200 and response.json()["bench"]["alias"] == "alpha"
    assert "died part way" in response.json()["bench"]["failed_over"][0]["error"]


def test_a_slow_first_token_sends_the_200_early_with_keepalives(settings: Settings, home: Path,
                                                                 upstream: str, net: Loopback, http: httpx.Client) -> None:
    seed_members(home, upstream, {"slow": "slow?latency=1", "slowfail": "slowfail?latency=1&fail=429"},
                 {"slow": ["slow"], "slowfail": ["slowfail"]})
    early = replace(FAST, stream_wait=0.2, first_token=3.0)
    with route_server(net, replace(settings, keepalive=0.2), early) as base:
        response = ask(http, base, "slow", stream=True)
        assert response.status_code == 200 and "x-bench-model" not in response.headers
        assert ": keep-alive" in response.text
        assert sse_data(response)[-1]["bench"]["alias"] == "slow"
        failed = ask(http, base, "slowfail", stream=True)
    assert failed.status_code == 200, "the 200 had gone before every member failed"
    assert "rate limited" in sse_data(failed)[-1]["error"]["message"]


def test_an_agent_that_hangs_up_stops_the_member_and_is_recorded(settings: Settings, home: Path,
                                                                 upstream: str, net: Loopback, http: httpx.Client) -> None:
    seed_members(home, upstream, {"drip": "drip?pause=3"}, {"drip": ["drip"]})
    with route_server(net, settings) as base:
        body = {"model": "bench/drip:route", "stream": True, "messages": [{"role": "user", "content": "go"}]}
        with http.stream("POST", base + "/v1/chat/completions", json=body) as response:
            assert response.status_code == 200
            lines = response.iter_lines()
            assert any("answer from drip" in line for line in lines), "the first piece came, then we hang up"
        deadline = time.monotonic() + 30
        while not read(home, routes.turns_of) and time.monotonic() < deadline:
            time.sleep(0.05)
    assert [t["status"] for t in read(home, routes.turns_of)] == ["cancelled"]
    assert [(r.status, r.purpose) for r in read(home, ledger.in_order)] == [("cancelled", "route")]


def test_an_agent_that_hangs_up_before_the_first_token_stops_the_member_at_once(
        settings: Settings, home: Path, upstream: str, net: Loopback, http: httpx.Client) -> None:
    """No event has come yet, so nothing fails on sending: the hang-up itself must stop the call
    (the member would answer only after a minute; the row must not wait for it)."""
    seed_members(home, upstream, {"sleepy": "sleepy?latency=60"}, {"sleepy": ["sleepy"]})
    early = replace(FAST, stream_wait=0.1, first_token=120.0, turn_timeout=300.0)
    with route_server(net, replace(settings, keepalive=0.1), early) as base:
        body = {"model": "bench/sleepy:route", "stream": True, "messages": [{"role": "user", "content": "go"}]}
        with http.stream("POST", base + "/v1/chat/completions", json=body) as response:
            assert response.status_code == 200
            assert any(line.startswith(": keep-alive") for line in response.iter_lines())
        deadline = time.monotonic() + 45  # inside sleepy's 60 s
        while not read(home, routes.turns_of) and time.monotonic() < deadline:
            time.sleep(0.05)
    assert [(t["status"], t["first_token_s"]) for t in read(home, routes.turns_of)] == [("cancelled", None)]
    assert [(r.status, r.purpose) for r in read(home, ledger.in_order)] == [("cancelled", "route")]


def test_a_failing_member_hands_over_at_once_and_only_the_last_retries(base: str, home: Path, http: httpx.Client) -> None:
    before = len(read(home, ledger.in_order))
    assert ask(http, base, "four").status_code == 502
    rows = read(home, ledger.in_order)[before:]
    attempts = {r.alias: r.attempts for r in rows}
    assert attempts["broken"] == 1 and attempts["broken2"] == 1, f"a member with another behind it hands over: {rows}"
    assert attempts["broken3"] >= 2, f"the last member tried retries in place: {rows}"
