"""Issue 18: shadow seats. Opt-in per collection, off by default; in route mode another member
answers the same turn in the background. Its answer never reaches the agent (the openai SDK over
the in-process gateway is the judge), is recorded as an unjudged call with its own id, takes a
verdict later, and is paced and counted in the ledger like any call."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import openai
import pytest

from benchwarmers_mcp.store import ledger
from benchwarmers_mcp.store import ratings as rating_store
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.loopback import Loopback
from tests.kits.route import read, route_server, said, seed_members

MEMBER_SAYS = "the member's answer: rename the parser module"
SHADOW_SAYS = "SHADOW-ONLY-7781: split the parser in two"


@pytest.fixture
def base(settings, home: Path, upstream: str, net: Loopback):
    seed_members(home, upstream, {"alpha": "alpha", "beta": "beta"}, {"agents": ["alpha", "beta"]})
    with route_server(net, settings) as url:
        yield url


@pytest.fixture
def oa(base: str, net: Loopback):
    with openai.OpenAI(http_client=net.client2(), base_url=base + "/v1", api_key="x", max_retries=0) as client:
        yield client


def ask(oa: openai.OpenAI, text: str) -> openai.types.chat.ChatCompletion:
    return oa.chat.completions.create(model="bench/agents:route", messages=[
        {"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": text}])


def shadows_of(home: Path, conversation: str, wanted: int = 1) -> list[rating_store.ShadowRecord]:
    """The conversation's shadow answers, once the background call has written them."""
    deadline = time.monotonic() + 60
    while True:
        found = read(home, rating_store.shadow_calls, conversation)
        if len(found) >= wanted or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def test_shadow_seats_are_off_by_default(oa: openai.OpenAI, fake: FakeUpstream, home: Path) -> None:
    fake.script["alpha"].append(said(MEMBER_SAYS))
    reply = ask(oa, "refactor the parser")
    assert reply.choices[0].message.content == MEMBER_SAYS
    assert fake.count("beta") == 0 and read(home, rating_store.shadow_calls) == []


def test_a_shadow_answers_in_the_background_and_never_reaches_the_agent(
        oa: openai.OpenAI, fake: FakeUpstream, home: Path, base: str, http: httpx.Client) -> None:
    on = http.post(base + "/api/learning-settings", json={"shadow": {"agents": True}})
    assert on.status_code == 200 and on.json()["shadow"] == ["agents"]
    fake.script["alpha"].append(said(MEMBER_SAYS))
    fake.script["beta"].append(said(SHADOW_SAYS))
    raw = oa.chat.completions.with_raw_response.create(model="bench/agents:route", messages=[
        {"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": "refactor the parser"}])
    reply = raw.parse()
    conversation = raw.headers["x-bench-conversation"]
    assert reply.choices[0].message.content == MEMBER_SAYS
    assert "SHADOW-ONLY" not in raw.http_response.text, "the shadow's answer never reaches the agent"
    [shadow] = shadows_of(home, conversation)
    assert (shadow.alias, shadow.status, shadow.answer, shadow.turn) == ("beta", "ok", SHADOW_SAYS, 1)
    assert shadow.call == f"{conversation}.s1" and shadow.call != reply.model_extra["bench"]["call"]
    beta_call = next(c for c in fake.calls if c.model == "beta")
    assert beta_call.body["messages"][-1]["content"] == "refactor the parser", "the same turn, word for word"
    rows = read(home, ledger.in_order)
    assert [(r.alias, r.purpose) for r in rows if r.alias == "beta"] == [("beta", "shadow")], "counted in the ledger"
    judged = http.post(base + "/bench/verdict", json={"call": shadow.call, "useful": True, "note": "better split"})
    assert judged.status_code == 200, judged.text
    ratings = http.get(base + "/bench/ratings", params={"collection": "agents", "shape": "route"}).json()
    beta = next(m for m in ratings["models"] if m["alias"] == "beta")
    assert beta["evidence"]["shadow"]["good"] == 1 and beta["mean"] == pytest.approx(3 / 5, abs=1e-3)


def test_a_failing_shadow_is_recorded_and_leaves_the_turn_alone(
        oa: openai.OpenAI, fake: FakeUpstream, home: Path, base: str, http: httpx.Client) -> None:
    http.post(base + "/api/learning-settings", json={"shadow": {"agents": True}})

    def broken(body: dict) -> dict:
        raise RuntimeError("the shadow's upstream broke")

    fake.script["alpha"].append(said(MEMBER_SAYS))
    fake.responders["beta"] = broken
    raw = oa.chat.completions.with_raw_response.create(model="bench/agents:route", messages=[
        {"role": "system", "content": "agent"}, {"role": "user", "content": "go"}])
    assert raw.parse().choices[0].message.content == MEMBER_SAYS
    [shadow] = shadows_of(home, raw.headers["x-bench-conversation"])
    assert shadow.status == "error" and shadow.answer == ""
