"""Route mode through the ollama client: tool calls (which carry no ids in Ollama) made, sent back
and matched, whole and streamed, and the done line's record."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import ollama
import pytest

from benchwarmers_mcp.settings import Settings
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.loopback import Loopback
from tests.kits.route import route_server, said, seed_members, tool_call

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


@pytest.fixture
def base(settings: Settings, home: Path, upstream: str, net: Loopback):
    seed_members(home, upstream, {"alpha": "alpha"}, {"agents": ["alpha"]})
    with route_server(net, settings) as url:
        yield url


@pytest.fixture
def client(base: str, net: Loopback):
    with ollama.Client(transport=net.transport(sync=True), host=base) as c:
        yield c


def test_tool_loop_whole(client: ollama.Client, fake: FakeUpstream) -> None:
    fake.script["alpha"] += [tool_call("call_up1", "get_weather", {"city": "Rome"}), said("Rome: 25C.")]
    messages = [{"role": "user", "content": "Weather in Rome?"}]
    first = client.chat(model="bench/agents:route", messages=messages, tools=[WEATHER], stream=False)
    (call,) = first.message.tool_calls
    assert (call.function.name, call.function.arguments) == ("get_weather", {"city": "Rome"})
    messages += [first.message.model_dump(exclude_none=True),
                 {"role": "tool", "content": "25C", "tool_name": "get_weather"}]
    second = client.chat(model="bench/agents:route", messages=messages, tools=[WEATHER], stream=False)
    assert second.message.content == "Rome: 25C." and second.done_reason == "stop"
    assert second.prompt_eval_count > 0 and second.eval_count > 0
    sent = fake.calls[-1].body["messages"]
    made = sent[-2]["tool_calls"][0]["id"]
    assert sent[-1] == {"role": "tool", "tool_call_id": made, "content": "25C"}, "the result answers the call"


def test_streamed_tool_call_and_bench(base: str, client: ollama.Client, fake: FakeUpstream, http: httpx.Client) -> None:
    fake.script["alpha"] += [{**tool_call("call_up2", "get_weather", {"city": "Oslo"}), "content": "Looking."}]
    chunks = list(client.chat(model="bench/agents:route", tools=[WEATHER], stream=True,
                              messages=[{"role": "user", "content": "Weather in Oslo?"}]))
    assert "".join(c.message.content or "" for c in chunks) == "Looking."
    calls = [t for c in chunks for t in (c.message.tool_calls or [])]
    assert [(t.function.name, t.function.arguments) for t in calls] == [("get_weather", {"city": "Oslo"})]
    assert chunks[-1].done and not any(c.done for c in chunks[:-1])

    raw = http.post(base + "/api/chat", json={
        "model": "bench/agents:route", "messages": [{"role": "user", "content": "and now?"}]})
    lines = [json.loads(line) for line in raw.text.splitlines()]
    assert raw.headers["content-type"].startswith("application/x-ndjson") and "" not in raw.text.split("\n")[:-1]
    assert lines[-1]["done"] and lines[-1]["bench"]["alias"] == "alpha" and lines[-1]["bench"]["reply"] == "route"
