"""The Anthropic Messages provider against a fake of that API on loopback."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

import pytest

from benchwarmers_mcp.errors import AuthOrBilling, ModelGone, RateLimited, UpstreamFailure
from benchwarmers_mcp.messages import (
    Image,
    Message,
    ModelRequest,
    Text,
    TextDelta,
    Tool,
    ToolCall,
    ToolResult,
    user,
)
from benchwarmers_mcp.providers.anthropic import build_body
from benchwarmers_mcp.upstream import quota
from tests.fakes.anthropic_upstream import FakeAnthropic
from tests.fakes.native import Reply
from tests.kits import provider as kit
from tests.kits.provider import answer_of, connect, raised, streamed, until_error

pytestmark = pytest.mark.anyio
base, client = kit.base, kit.client  # the kit's fixtures
KEY = "sk-ant-test-key"
WEATHER = Tool("get_weather", "Get weather", {"type": "object", "properties": {"city": {"type": "string"}},
                                                "required": ["city"]})


@pytest.fixture
def upstream_fake() -> FakeAnthropic:
    return FakeAnthropic(key=KEY)


def provider(base: str, client, key: str | None = KEY, headers: dict | None = None):
    return connect("anthropic", base, client, key, headers)


async def test_whole_answer_with_key_version_system_and_usage(base, client, upstream_fake):
    answer = await provider(base, client).complete(
        ModelRequest("claude-fake", (user("What is 2+2?"),), system="Be brief.", options={"temperature": 0.2}))
    assert answer.text == "answer from claude-fake: What is 2+2?"
    assert answer.finish_reason == "stop"
    call = upstream_fake.calls[-1]
    assert answer.usage and answer.usage.input_tokens == call.tokens_in and answer.usage.output_tokens == call.tokens_out
    assert call.headers["x-api-key"] == KEY and call.headers["anthropic-version"] == "2023-06-01"
    assert call.body["system"] == "Be brief." and call.body["max_tokens"] == 4096
    assert call.body["temperature"] == 0.2 and call.path == "/v1/messages"


async def test_base_url_ending_in_v1_and_endpoint_headers(base, client, upstream_fake):
    p = provider(base + "/v1", client, headers={"anthropic-version": "2026-10-21", "anthropic-beta": "x"})
    await p.complete(ModelRequest("m", (user("hi"),), options={"max_tokens": 50, "stop": "END"}))
    call = upstream_fake.calls[-1]
    assert call.path == "/v1/messages" and call.headers["anthropic-version"] == "2026-10-21"
    assert call.headers["anthropic-beta"] == "x"
    assert call.body["max_tokens"] == 50 and call.body["stop_sequences"] == ["END"]


async def test_streamed_answer_arrives_in_pieces_with_usage(base, client, upstream_fake):
    answer, events = await streamed(provider(base, client), ModelRequest("claude-fake", (user("stream me " * 5),)))
    texts = [e for e in events if isinstance(e, TextDelta)]
    assert len(texts) > 2 and answer.text.startswith("answer from claude-fake: stream me")
    call = upstream_fake.calls[-1]
    assert call.body["stream"] is True
    assert answer.usage and (answer.usage.input_tokens, answer.usage.output_tokens) == (call.tokens_in, call.tokens_out)


@pytest.mark.parametrize("stream", [False, True])
async def test_tool_calls_come_back_as_json_text(base, client, upstream_fake, stream):
    upstream_fake.script["tooly"].append(Reply("Let me check.", [("toolu_01", "get_weather", {"city": "Paris"})]))
    request = ModelRequest("tooly", (user("Weather in Paris?"),), tools=(WEATHER,), tool_choice="required",
                           parallel_tool_calls=False)
    answer = await answer_of(provider(base, client), request, stream=stream)
    assert answer.text == "Let me check."
    [call] = answer.tool_calls
    assert (call.id, call.name, json.loads(call.arguments)) == ("toolu_01", "get_weather", {"city": "Paris"})
    assert answer.finish_reason == "tool_calls"
    body = upstream_fake.calls[-1].body
    assert body["tools"] == [{"name": "get_weather", "description": "Get weather", "input_schema": WEATHER.parameters}]
    assert body["tool_choice"] == {"type": "any", "disable_parallel_tool_use": True}


async def test_tool_history_goes_out_as_tool_use_and_tool_result(base, client, upstream_fake):
    history = (
        user("Weather in Paris?"),
        Message("assistant", (Text("Checking."), ToolCall("toolu_9", "get_weather", '{"city":"Paris"}'))),
        Message("tool", (ToolResult("toolu_9", "21C sunny", name="get_weather"),)),
        user("And should I take a coat?"),
    )
    answer = await provider(base, client).complete(ModelRequest("m", history, tools=(WEATHER,)))
    assert answer.text.startswith("answer from m")  # the fake refuses unknown ids and non-alternating roles
    sent = upstream_fake.calls[-1].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert sent[1]["content"][1] == {"type": "tool_use", "id": "toolu_9", "name": "get_weather",
                                     "input": {"city": "Paris"}}
    assert sent[2]["content"][0] == {"type": "tool_result", "tool_use_id": "toolu_9", "content": "21C sunny",
                                     "is_error": False}
    assert sent[2]["content"][1] == {"type": "text", "text": "And should I take a coat?"}


async def test_images_go_out_as_base64_and_url_sources(base, client, upstream_fake):
    message = Message("user", (Image("data:image/png;base64,iVBORw0KGgo="), Image("https://example.com/cat.jpg"),
                               Text("What is in these?")))
    await provider(base, client).complete(ModelRequest("m", (message,)))
    content = upstream_fake.calls[-1].body["messages"][0]["content"]
    assert content[0] == {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                      "data": "iVBORw0KGgo="}}
    assert content[1] == {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}}


async def test_thinking_blocks_become_reasoning(base, client, upstream_fake):
    upstream_fake.script["thinker"].append(Reply("42", thinking="six times seven"))
    whole = await provider(base, client).complete(ModelRequest("thinker", (user("6*7?"),)))
    upstream_fake.script["thinker"].append(Reply("42", thinking="six times seven"))
    streamed_answer, _ = await streamed(provider(base, client), ModelRequest("thinker", (user("6*7?"),)))
    assert whole.reasoning == streamed_answer.reasoning == "six times seven"
    assert whole.text == streamed_answer.text == "42"


@pytest.mark.parametrize(("served", "kind", "status"), [
    ("busy?fail=429", RateLimited, 429),
    ("gone?fail=404", ModelGone, 404),
    ("broke?fail=500", UpstreamFailure, 500),
    ("full?fail=529", UpstreamFailure, 529),
    ("poor?fail=402", AuthOrBilling, 402),
])
@pytest.mark.parametrize("stream", [False, True])
async def test_errors_map_to_the_error_tree(base, client, served, kind, status, stream):
    error = await raised(provider(base, client), served, kind, stream=stream)
    assert error.upstream_status == status
    assert f"fake {status}" in error.message
    if status == 429:  # retry-after 40, but the requests window it reports used up reopens only in 2099:
        # later than any wait a provider's word is taken for, so the wait is that day at most
        assert datetime(2099, 1, 1, tzinfo=UTC).timestamp() - time.time() > quota.MOST_WAIT
        assert error.retry_after == quota.MOST_WAIT


async def test_a_wrong_key_is_auth(base, client):
    with pytest.raises(AuthOrBilling) as caught:
        await provider(base, client, key="wrong").complete(ModelRequest("m", (user("hi"),)))
    assert caught.value.upstream_status == 401 and "x-api-key" in caught.value.message


async def test_an_error_event_mid_stream_raises(base, client):
    request = ModelRequest("cut?fail=midstream", (user("a long question here"),))
    seen, error = await until_error(provider(base, client), request, UpstreamFailure)
    assert seen and isinstance(seen[0], TextDelta)
    assert error.upstream_status == 529 and "Overloaded" in error.message


def test_a_named_tool_choice_and_max_completion_tokens_map_to_anthropic_names():
    for choice in ({"type": "function", "function": {"name": "get_weather"}}, {"name": "get_weather"}):
        body = build_body(ModelRequest("m", (user("hi"),), tools=(WEATHER,), tool_choice=choice,
                                       options={"max_completion_tokens": 77, "top_k": 5}), stream=False)
        assert body["tool_choice"] == {"type": "tool", "name": "get_weather"}
        assert body["max_tokens"] == 77 and body["top_k"] == 5
