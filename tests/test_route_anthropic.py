"""Route mode through the anthropic SDK: a streamed tool loop, a whole tool call, Claude Code's
extra fields and headers accepted, and failures in Anthropic's error shape."""

from __future__ import annotations

from pathlib import Path

import anthropic
import pytest

from benchwarmers_mcp.settings import Settings
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.loopback import Loopback
from tests.kits.route import route_server, said, seed_members, tool_call

WEATHER = {"name": "get_weather", "description": "Weather in a city",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
CLAUDE_CODE_EXTRAS = {
    "extra_body": {"thinking": {"type": "adaptive"}, "context_management": {"edits": []},
                   "output_config": {"effort": "high"}, "metadata": {"user_id": "someone"}},
    "extra_headers": {"anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14",
                      "x-claude-code-session-id": "session-1"},
}


@pytest.fixture
def base(settings: Settings, home: Path, upstream: str, net: Loopback):
    seed_members(home, upstream, {"alpha": "alpha", "limited": "bad?fail=429"},
                 {"agents": ["alpha"], "limited": ["limited"]}, max_output=4096)
    with route_server(net, settings) as url:
        yield url


@pytest.fixture
def claude(base: str, net: Loopback):
    with anthropic.Anthropic(http_client=net.client2(), base_url=base, api_key="anything", max_retries=0) as client:
        yield client


def test_streamed_tool_loop(claude: anthropic.Anthropic, fake: FakeUpstream) -> None:
    fake.script["alpha"] += [tool_call("call_a1", "get_weather", {"city": "Lima"}), said("Lima is 19C.")]
    messages = [{"role": "user", "content": "Weather in Lima?"}]
    with claude.messages.stream(model="bench/agents:route", max_tokens=32_000, system="Weather agent.",
                                      tools=[WEATHER], messages=messages, **CLAUDE_CODE_EXTRAS) as stream:
        first = stream.get_final_message()
    assert first.stop_reason == "tool_use"
    (use,) = [b for b in first.content if b.type == "tool_use"]
    assert (use.id, use.name, use.input) == ("call_a1", "get_weather", {"city": "Lima"})
    upstream = fake.calls[-1].body
    assert upstream["max_tokens"] == 4096 and upstream["tools"][0]["function"]["name"] == "get_weather"
    assert upstream["messages"][0] == {"role": "system", "content": "Weather agent."}

    messages += [{"role": "assistant", "content": [b.model_dump() for b in first.content]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_a1", "content": "19C"}]}]
    with claude.messages.stream(model="bench/agents:route", max_tokens=32_000, system="Weather agent.",
                                      tools=[WEATHER], messages=messages, **CLAUDE_CODE_EXTRAS) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == "Lima is 19C." and final.stop_reason == "end_turn"
    assert final.usage.input_tokens > 0 and final.usage.output_tokens > 0
    assert fake.calls[-1].body["messages"][-1] == {"role": "tool", "tool_call_id": "call_a1", "content": "19C"}


def test_whole_tool_call_and_bench(claude: anthropic.Anthropic, fake: FakeUpstream) -> None:
    fake.script["alpha"] += [{**tool_call("call_a2", "get_weather", {"city": "Kyiv"}), "content": "Checking."}]
    raw = claude.messages.with_raw_response.create(
        model="bench/agents:route", max_tokens=1000, tools=[WEATHER],
        messages=[{"role": "user", "content": "Weather in Kyiv?"}])
    reply = raw.parse()
    assert raw.headers["x-bench-model"] == "alpha" and raw.headers["x-bench-conversation"].startswith("r")
    assert reply.model == "bench/agents:route", "the model name comes back as it was sent"
    assert [b.type for b in reply.content] == ["text", "tool_use"] and reply.content[0].text == "Checking."
    assert reply.content[1].input == {"city": "Kyiv"} and reply.stop_reason == "tool_use"
    assert reply.model_extra["bench"]["call"] == raw.headers["x-bench-conversation"] + ".1"


def test_a_failed_tool_result_says_so(claude: anthropic.Anthropic, fake: FakeUpstream) -> None:
    messages = [{"role": "user", "content": "Weather?"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                                                   "input": {"city": "Nowhere"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "is_error": True,
                                              "content": [{"type": "text", "text": "no such city"}]}]}]
    claude.messages.create(model="bench/agents:route", max_tokens=100, tools=[WEATHER], messages=messages)
    sent = fake.calls[-1].body["messages"]
    assert sent[-2]["tool_calls"][0]["id"] == "toolu_1"
    assert sent[-1] == {"role": "tool", "tool_call_id": "toolu_1", "content": "Error: no such city"}


def test_every_member_rate_limited(claude: anthropic.Anthropic) -> None:
    with pytest.raises(anthropic.RateLimitError) as caught:
        claude.messages.create(model="bench/limited:route", max_tokens=100,
                                     messages=[{"role": "user", "content": "hi"}])
    assert caught.value.body["error"]["type"] == "rate_limit_error"
    with pytest.raises(anthropic.RateLimitError):
        with claude.messages.stream(model="bench/limited:route", max_tokens=100,
                                          messages=[{"role": "user", "content": "hi"}]) as stream:
            stream.get_final_message()
