"""The OpenAI Responses provider against a fake of /v1/responses on loopback."""

from __future__ import annotations

import json

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
from tests.fakes.native import Reply
from tests.fakes.responses_upstream import FakeResponses
from tests.kits import provider as kit
from tests.kits.provider import answer_of, connect, raised, streamed, until_error

pytestmark = pytest.mark.anyio
base, client = kit.base, kit.client  # the kit's fixtures
API_ROOT = "/v1"  # the provider's base URL is the fake's address + this
WEATHER = Tool("get_weather", "Get weather", {"type": "object", "properties": {"city": {"type": "string"}}})


@pytest.fixture
def upstream_fake() -> FakeResponses:
    return FakeResponses()


def provider(base: str, client):
    return connect("responses", base, client, "sk-test")


async def test_whole_answer_is_stateless_with_instructions(base, client, upstream_fake):
    request = ModelRequest("gpt-fake", (user("Hello?"),), system="Be brief.",
                           options={"max_tokens": 64, "reasoning_effort": "low"})
    answer = await provider(base, client).complete(request)
    call = upstream_fake.calls[-1]
    assert answer.text == "answer from gpt-fake: Hello?"
    assert call.headers["authorization"] == "Bearer sk-test"
    assert call.body["instructions"] == "Be brief." and call.body["store"] is False
    assert call.body["max_output_tokens"] == 64 and call.body["reasoning"] == {"effort": "low"}
    assert call.body["input"] == [{"role": "user", "content": [{"type": "input_text", "text": "Hello?"}]}]
    assert answer.usage and (answer.usage.input_tokens, answer.usage.output_tokens) == (call.tokens_in, call.tokens_out)


async def test_streamed_typed_events(base, client, upstream_fake):
    answer, events = await streamed(provider(base, client), ModelRequest("gpt-fake", (user("stream a bit more"),)))
    assert sum(isinstance(e, TextDelta) for e in events) > 2
    assert answer.text == "answer from gpt-fake: stream a bit more"
    assert answer.usage and answer.usage.output_tokens == upstream_fake.calls[-1].tokens_out


@pytest.mark.parametrize("stream", [False, True])
async def test_function_calls_with_flat_tools(base, client, upstream_fake, stream):
    upstream_fake.script["m"].append(Reply("", [("call_abc", "get_weather", {"city": "Paris"})], thinking="plan"))
    request = ModelRequest("m", (user("Weather?"),), tools=(WEATHER,),
                           tool_choice={"type": "function", "function": {"name": "get_weather"}},
                           parallel_tool_calls=False)
    answer = await answer_of(provider(base, client), request, stream=stream)
    [call] = answer.tool_calls
    assert (call.id, call.name, json.loads(call.arguments)) == ("call_abc", "get_weather", {"city": "Paris"})
    assert answer.reasoning == "plan" and answer.finish_reason == "tool_calls"
    body = upstream_fake.calls[-1].body
    assert body["tools"] == [{"type": "function", "name": "get_weather", "description": "Get weather",
                              "parameters": WEATHER.parameters}]
    assert body["tool_choice"] == {"type": "function", "name": "get_weather"}
    assert body["parallel_tool_calls"] is False


async def test_history_items_and_images(base, client, upstream_fake):
    history = (
        Message("user", (Text("Describe"), Image("data:image/png;base64,iVBORw0KGgo="))),
        Message("assistant", (Text("Let me look."), ToolCall("call_1", "get_weather", '{"city":"Paris"}'))),
        Message("tool", (ToolResult("call_1", '{"temp_c":21}'),)),
    )
    await provider(base, client).complete(ModelRequest("m", history, tools=(WEATHER,)))
    items = upstream_fake.calls[-1].body["input"]
    assert items[0]["content"][1] == {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=",
                                      "detail": "auto"}
    assert items[1] == {"role": "assistant", "content": [{"type": "output_text", "text": "Let me look."}]}
    assert items[2] == {"type": "function_call", "call_id": "call_1", "name": "get_weather",
                        "arguments": '{"city":"Paris"}'}
    assert items[3] == {"type": "function_call_output", "call_id": "call_1", "output": '{"temp_c":21}'}


@pytest.mark.parametrize(("served", "kind", "status"), [
    ("busy?fail=429", RateLimited, 429), ("broke?fail=500", UpstreamFailure, 500),
    ("gone?fail=404", ModelGone, 404), ("locked?fail=401", AuthOrBilling, 401)])
@pytest.mark.parametrize("stream", [False, True])
async def test_errors_map_to_the_error_tree(base, client, served, kind, status, stream):
    error = await raised(provider(base, client), served, kind, stream=stream)
    assert error.upstream_status == status


async def test_an_error_event_mid_stream_raises(base, client):
    request = ModelRequest("m?fail=midstream", (user("question"),))
    seen, _ = await until_error(provider(base, client), request, UpstreamFailure, match="The server had an error")
    assert seen
