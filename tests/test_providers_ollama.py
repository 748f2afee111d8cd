"""The Ollama native provider against a fake of /api/chat on loopback."""

from __future__ import annotations

import json

import pytest

from benchwarmers_mcp.errors import ModelGone, RateLimited, UpstreamFailure
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
from tests.fakes.ollama_upstream import FakeOllama
from tests.kits import provider as kit
from tests.kits.provider import answer_of, connect, raised, streamed, until_error

pytestmark = pytest.mark.anyio
base, client = kit.base, kit.client  # the kit's fixtures
WEATHER = Tool("get_weather", "Get weather", {"type": "object", "properties": {"city": {"type": "string"}}})


@pytest.fixture
def upstream_fake() -> FakeOllama:
    return FakeOllama()


def provider(base: str, client, key: str | None = None):
    return connect("ollama", base, client, key)


async def test_whole_answer_with_system_options_and_counts(base, client, upstream_fake):
    request = ModelRequest("llama3.2", (user("Say hi"),), system="Be brief.",
                           options={"temperature": 0.1, "max_tokens": 30, "seed": 7})
    answer = await provider(base, client).complete(request)
    call = upstream_fake.calls[-1]
    assert answer.text == "answer from llama3.2: Say hi"
    assert call.body["stream"] is False
    assert call.body["messages"][0] == {"role": "system", "content": "Be brief."}
    assert call.body["options"] == {"temperature": 0.1, "seed": 7, "num_predict": 30}
    assert "authorization" not in call.headers
    assert answer.usage and (answer.usage.input_tokens, answer.usage.output_tokens) == (call.tokens_in, call.tokens_out)


@pytest.mark.parametrize("suffix", ["", "/v1", "/api"])
async def test_base_url_spellings_reach_api_chat(base, client, upstream_fake, suffix):
    await provider(base + suffix, client, key="cloud-key").complete(ModelRequest("m", (user("hi"),)))
    call = upstream_fake.calls[-1]
    assert call.path == "/api/chat" and call.headers["authorization"] == "Bearer cloud-key"


async def test_streamed_ndjson_ends_with_the_done_counts(base, client, upstream_fake):
    answer, events = await streamed(provider(base, client), ModelRequest("m", (user("a longer question please"),)))
    assert sum(isinstance(e, TextDelta) for e in events) > 2
    assert answer.text == "answer from m: a longer question please"
    assert upstream_fake.calls[-1].body["stream"] is True
    assert answer.usage and answer.usage.output_tokens == upstream_fake.calls[-1].tokens_out


@pytest.mark.parametrize("stream", [False, True])
async def test_tool_calls_and_thinking(base, client, upstream_fake, stream):
    upstream_fake.script["m"].append(Reply("", [("", "get_weather", {"city": "Paris"})], thinking="hmm"))
    request = ModelRequest("m", (user("Weather?"),), tools=(WEATHER,))
    answer = await answer_of(provider(base, client), request, stream=stream)
    [call] = answer.tool_calls
    assert (call.name, json.loads(call.arguments)) == ("get_weather", {"city": "Paris"})
    assert answer.reasoning == "hmm" and answer.finish_reason == "tool_calls"
    assert upstream_fake.calls[-1].body["tools"][0]["function"]["name"] == "get_weather"


async def test_history_with_tool_calls_results_and_images(base, client, upstream_fake):
    history = (
        Message("user", (Text("What is this and the weather?"), Image("data:image/png;base64,iVBORw0KGgo="))),
        Message("assistant", (ToolCall("call_1", "get_weather", '{"city":"Paris"}'),)),
        Message("tool", (ToolResult("call_1", "21C"),)),
    )
    await provider(base, client).complete(ModelRequest("m", history, tools=(WEATHER,), tool_choice="none"))
    sent = upstream_fake.calls[-1].body
    assert sent["messages"][0]["images"] == ["iVBORw0KGgo="]
    assert sent["messages"][1]["tool_calls"] == [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]
    assert sent["messages"][2] == {"role": "tool", "content": "21C", "tool_name": "get_weather"}
    assert "tools" not in sent  # tool_choice none: Ollama has no switch, so none are offered


async def test_a_linked_image_is_refused_before_sending(base, client, upstream_fake):
    message = Message("user", (Text("see"), Image("https://example.com/cat.png")))
    with pytest.raises(UpstreamFailure, match="data: URLs"):
        await provider(base, client).complete(ModelRequest("m", (message,)))
    assert upstream_fake.count() == 0


async def test_json_format(base, client, upstream_fake):
    await provider(base, client).complete(ModelRequest("m", (user("j"),), response_format={"type": "json_object"}))
    assert upstream_fake.calls[-1].body["format"] == "json"


@pytest.mark.parametrize(("served", "kind", "status"), [
    ("nope?fail=404", ModelGone, 404), ("busy?fail=429", RateLimited, 429), ("bad?fail=500", UpstreamFailure, 500)])
@pytest.mark.parametrize("stream", [False, True])
async def test_errors_map_to_the_error_tree(base, client, served, kind, status, stream):
    error = await raised(provider(base, client), served, kind, stream=stream)
    assert error.upstream_status == status
    if status == 404:
        assert "model 'nope' not found" in error.message


async def test_an_error_line_mid_stream_raises(base, client):
    request = ModelRequest("m?fail=midstream", (user("question"),))
    seen, _ = await until_error(provider(base, client), request, UpstreamFailure, match="error was encountered")
    assert seen
