"""Route mode through the openai SDK: tools whole and streamed, everything passed through, the
record kept, and refusals in OpenAI's error shape."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import openai
import pytest

from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import ledger, routes
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.loopback import Loopback
from tests.kits.route import read, route_server, said, seed_members, tool_call

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
MARKER = "zebra-umbrella-7731"


@pytest.fixture
def base(settings: Settings, home: Path, upstream: str, net: Loopback):
    seed_members(home, upstream, {"alpha": "alpha", "beta": "beta"}, {"agents": ["alpha", "beta"]},
                 max_output=4096, context_window=100_000)
    with route_server(net, settings) as url:
        yield url


@pytest.fixture
def oa(base: str, net: Loopback):
    with openai.OpenAI(http_client=net.client2(), base_url=base + "/v1", api_key="anything", max_retries=0) as client:
        yield client


def first_turn() -> list[dict]:
    return [{"role": "system", "content": "You are a weather agent."},
            {"role": "user", "content": f"What is the weather in Paris? {MARKER}"}]


def test_tool_loop_whole_passes_everything_through(oa: openai.OpenAI, fake: FakeUpstream, home: Path) -> None:
    fake.script["alpha"] += [tool_call("call_w1", "get_weather", {"city": "Paris"}), said("It is 21C in Paris.")]
    raw = oa.chat.completions.with_raw_response.create(
        model="bench/agents:route", messages=first_turn(), tools=[WEATHER], tool_choice="auto",
        parallel_tool_calls=False, temperature=0.2, max_tokens=50_000, response_format={"type": "text"})
    first = raw.parse()
    assert raw.headers["x-bench-model"] == "alpha"
    conversation = raw.headers["x-bench-conversation"]
    assert first.model == "bench/agents"
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert [(c.id, c.function.name, json.loads(c.function.arguments)) for c in choice.message.tool_calls] == [
        ("call_w1", "get_weather", {"city": "Paris"})]
    bench = first.model_extra["bench"]
    assert bench["reply"] == "route" and bench["conversation"] == conversation and bench["turn"] == 1
    assert bench["call"] == f"{conversation}.1" and bench["alias"] == "alpha"

    sent = fake.calls[-1].body
    assert sent["tools"][0]["function"]["name"] == "get_weather"
    assert (sent["tool_choice"], sent["parallel_tool_calls"], sent["temperature"]) == ("auto", False, 0.2)
    assert sent["max_tokens"] == 4096, "an output budget above the member's limit is cut to it"
    assert sent["response_format"] == {"type": "text"}

    messages = [*first_turn(), choice.message.model_dump(exclude_none=True),
                {"role": "tool", "tool_call_id": "call_w1", "content": "21C and sunny"}]
    second = oa.chat.completions.create(model="bench/agents:route", messages=messages, tools=[WEATHER])
    assert second.choices[0].message.content == "It is 21C in Paris."
    assert second.model_extra["bench"]["turn"] == 2
    assert second.model_extra["bench"]["call"] == bench["call"], "one call id per member per conversation"
    tool_message = fake.calls[-1].body["messages"][-1]
    assert tool_message == {"role": "tool", "tool_call_id": "call_w1", "content": "21C and sunny"}

    turns = read(home, routes.turns_of, conversation)
    assert [(t["turn"], t["alias"], t["status"], t["tool_calls"], t["finish"]) for t in turns] == [
        (1, "alpha", "ok", 1, "tool_calls"), (2, "alpha", "ok", 0, "stop")]
    assert all(t["tokens_in"] > 0 and t["first_token_s"] is not None for t in turns)
    assert [(c.alias, c.collection) for c in read(home, routes.member_calls)] == [("alpha", "bench/agents")]
    assert [(r.purpose, r.caller) for r in read(home, ledger.in_order)] == [("route", "route")] * 2


def test_a_turn_keeps_its_last_user_message_only(oa: openai.OpenAI, home: Path, fake: FakeUpstream) -> None:
    """To be judged later a turn keeps the last user message and its answer (issue 30), never the
    system text or the rest of the conversation."""
    fake.script["alpha"] += [said("Sunny, 21C.")]
    oa.chat.completions.create(model="bench/agents:route", messages=[
        *first_turn(), {"role": "assistant", "content": "Which Paris?"}, {"role": "user", "content": "France."}],
        tools=[WEATHER])
    stored = b"".join(p.read_bytes() for p in home.glob("benchwarmers.db*"))
    assert b"weather agent" not in stored and MARKER.encode() not in stored
    assert [(t["prompt"], t["answer"]) for t in read(home, routes.turns_of)] == [("France.", "Sunny, 21C.")]


def test_tool_loop_streamed(oa: openai.OpenAI, fake: FakeUpstream) -> None:
    fake.script["alpha"] += [tool_call("call_s1", "get_weather", {"city": "Oslo"}), said("Oslo: 3C, snow.")]
    chunks = list(oa.chat.completions.create(model="bench/agents:route", messages=first_turn(), tools=[WEATHER],
                                             stream=True, stream_options={"include_usage": True}))
    assert {c.model for c in chunks} == {"bench/agents"}
    calls: dict[int, dict] = {}
    for chunk in chunks:
        for choice in chunk.choices:
            for d in choice.delta.tool_calls or []:
                entry = calls.setdefault(d.index, {"id": None, "name": None, "args": ""})
                entry["id"] = entry["id"] or d.id
                entry["name"] = entry["name"] or (d.function.name if d.function else None)
                entry["args"] += (d.function.arguments or "") if d.function else ""
    assert calls == {0: {"id": "call_s1", "name": "get_weather", "args": json.dumps({"city": "Oslo"})}}
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishes == ["tool_calls"]
    last = chunks[-1]
    assert last.choices == [] and last.usage.prompt_tokens > 0
    assert last.model_extra["bench"]["alias"] == "alpha" and last.model_extra["bench"]["turn"] == 1

    messages = [*first_turn(), {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_s1", "type": "function", "function": {"name": "get_weather", "arguments": calls[0]["args"]}}]},
        {"role": "tool", "tool_call_id": "call_s1", "content": "3C, snow"}]
    with oa.chat.completions.stream(model="bench/agents:route", messages=messages, tools=[WEATHER]) as stream:
        final = stream.get_final_completion()
    assert final.choices[0].message.content == "Oslo: 3C, snow."


def test_refusals_in_openai_shape(settings: Settings, home: Path, upstream: str, net: Loopback, http: httpx.Client) -> None:
    seed_members(home, upstream, {"plain": "plain"}, {"notools": ["plain"]}, tools=False)
    seed_members(home, upstream, {"tiny": "tiny"}, {"small": ["tiny"]}, context_window=50, endpoint="fake2")
    seed_members(home, upstream, {}, {"empty": []}, endpoint="fake3")
    with route_server(net, settings) as url:
        def ask(model: str, tools: bool = True, text: str = "hi") -> httpx.Response:
            body = {"model": model, "messages": [{"role": "user", "content": text}]}
            if tools:
                body["tools"] = [WEATHER]
            return http.post(url + "/v1/chat/completions", json=body)

        no_tools = ask("bench/notools:route")
        assert no_tools.status_code == 400 and no_tools.json()["error"]["type"] == "bench_gateway"
        assert "plain" in no_tools.json()["error"]["message"] and "tools" in no_tools.json()["error"]["message"]
        assert ask("bench/notools:route", tools=False).status_code == 200
        too_big = ask("bench/small:route", text="word " * 400)
        assert too_big.status_code == 413 and "tiny" in too_big.json()["error"]["message"]
        nobody = ask("bench/empty:route")
        assert nobody.status_code == 503 and nobody.json()["error"]["code"] == 503


def test_a_verdict_on_a_route_call(base: str, oa: openai.OpenAI, http: httpx.Client) -> None:
    reply = oa.chat.completions.create(model="bench/agents:route", messages=first_turn(), tools=[WEATHER])
    call = reply.model_extra["bench"]["call"]
    verdict = http.post(base + "/bench/verdict", json={"call": call, "useful": True, "note": "fixed it"})
    assert verdict.status_code == 200 and verdict.json()["recorded"]["call"] == call
    record = http.get(base + "/bench/record", params={"collection": "bench/agents"}).json()
    alias = reply.model_extra["bench"]["alias"]
    assert record["aliases"][alias]["useful"] == 1, "route verdicts count in the collection's record"
