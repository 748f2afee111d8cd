"""The Gemini provider against a fake of the generateContent API on loopback."""

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
from benchwarmers_mcp.providers.gemini import build_body
from tests.fakes.gemini_upstream import FakeGemini
from tests.fakes.native import Reply
from tests.kits import provider as kit
from tests.kits.provider import answer_of, connect, raised, streamed, until_error

pytestmark = pytest.mark.anyio
base, client = kit.base, kit.client  # the kit's fixtures
KEY = "AIza-test-key"
WEATHER = Tool("get_weather", "Get weather", {
    "type": "object", "additionalProperties": False, "$schema": "x",
    "properties": {"city": {"type": "string", "description": "a city"},
                   "days": {"type": ["integer", "null"]},
                   "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}},
    "required": ["city"]})


@pytest.fixture
def upstream_fake() -> FakeGemini:
    return FakeGemini(key=KEY)


def provider(base: str, client, key: str | None = KEY):
    return connect("gemini", base, client, key)


async def test_whole_answer_with_system_instruction_key_and_usage(base, client, upstream_fake):
    request = ModelRequest("models/gemini-fake", (user("Name a colour"),), system="One word.",
                           options={"temperature": 0.3, "max_tokens": 20, "stop": ["END"]})
    answer = await provider(base + "/v1beta", client).complete(request)
    call = upstream_fake.calls[-1]
    assert answer.text == "answer from gemini-fake: Name a colour"
    assert call.path == "/v1beta/models/gemini-fake:generateContent"
    assert call.headers["x-goog-api-key"] == KEY
    assert call.body["systemInstruction"] == {"parts": [{"text": "One word."}]}
    assert call.body["generationConfig"] == {"temperature": 0.3, "maxOutputTokens": 20, "stopSequences": ["END"]}
    assert answer.usage and (answer.usage.input_tokens, answer.usage.output_tokens) == (call.tokens_in, call.tokens_out)


async def test_a_bare_host_gets_v1beta_and_v1_is_kept(base, client, upstream_fake):
    await provider(base, client).complete(ModelRequest("g", (user("hi"),)))
    await provider(base + "/v1", client).complete(ModelRequest("g", (user("hi"),)))
    assert [c.path for c in upstream_fake.calls] == ["/v1beta/models/g:generateContent", "/v1/models/g:generateContent"]


async def test_streamed_answer_is_sse_with_alt_and_usage(base, client, upstream_fake):
    answer, events = await streamed(provider(base, client), ModelRequest("g", (user("tell me a long story"),)))
    assert sum(isinstance(e, TextDelta) for e in events) > 2
    assert answer.text == "answer from g: tell me a long story"
    call = upstream_fake.calls[-1]
    assert call.path.endswith(":streamGenerateContent")
    assert answer.usage and answer.usage.output_tokens == call.tokens_out


@pytest.mark.parametrize("stream", [False, True])
async def test_function_calls_get_ids_and_json_text(base, client, upstream_fake, stream):
    upstream_fake.script["g"].append(Reply("", [("", "get_weather", {"city": "Paris"})]))
    request = ModelRequest("g", (user("Weather in Paris?"),), tools=(WEATHER,), tool_choice="required")
    answer = await answer_of(provider(base, client), request, stream=stream)
    [call] = answer.tool_calls
    assert call.name == "get_weather" and json.loads(call.arguments) == {"city": "Paris"}
    assert call.id.startswith("call_") and answer.finish_reason == "tool_calls"
    body = upstream_fake.calls[-1].body
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "ANY"}}
    [declaration] = body["tools"][0]["functionDeclarations"]
    assert declaration["parameters"] == {
        "type": "OBJECT", "required": ["city"],
        "properties": {"city": {"type": "STRING", "description": "a city"},
                       "days": {"type": "INTEGER", "nullable": True},
                       "tags": {"type": "ARRAY", "items": {"type": "STRING", "enum": ["a", "b"]}}}}


async def test_history_maps_roles_function_calls_and_responses(base, client, upstream_fake):
    history = (
        user("Weather in Paris?"),
        Message("assistant", (ToolCall("call_1", "get_weather", '{"city":"Paris"}'),)),
        Message("tool", (ToolResult("call_1", '{"temp_c": 21}'),)),
        Message("tool", (ToolResult("call_1", "no data", is_error=True),)),
    )
    await provider(base, client).complete(ModelRequest("g", history, tools=(WEATHER,), tool_choice="auto"))
    contents = upstream_fake.calls[-1].body["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user"]
    assert contents[1]["parts"] == [{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}]
    assert contents[2]["parts"] == [
        {"functionResponse": {"name": "get_weather", "response": {"temp_c": 21}}},
        {"functionResponse": {"name": "get_weather", "response": {"error": "no data"}}}]


async def test_images_inline_and_by_link(base, client, upstream_fake):
    message = Message("user", (Text("What is this?"), Image("data:image/webp;base64,UklGRg=="),
                               Image("https://example.com/a.png")))
    await provider(base, client).complete(ModelRequest("g", (message,)))
    parts = upstream_fake.calls[-1].body["contents"][0]["parts"]
    assert parts[1] == {"inlineData": {"mimeType": "image/webp", "data": "UklGRg=="}}
    assert parts[2] == {"fileData": {"mimeType": "image/png", "fileUri": "https://example.com/a.png"}}


async def test_thoughts_are_reasoning(base, client, upstream_fake):
    upstream_fake.script["g"].append(Reply("42", thinking="six sevens"))
    answer, _ = await streamed(provider(base, client), ModelRequest("g", (user("6*7"),)))
    assert (answer.reasoning, answer.text) == ("six sevens", "42")


async def test_json_response_format_becomes_response_schema(base, client, upstream_fake):
    fmt = {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object", "properties": {
        "ok": {"type": "boolean"}}}}}
    await provider(base, client).complete(ModelRequest("g", (user("json"),), response_format=fmt))
    config = upstream_fake.calls[-1].body["generationConfig"]
    assert config == {"responseMimeType": "application/json",
                      "responseSchema": {"type": "OBJECT", "properties": {"ok": {"type": "BOOLEAN"}}}}


@pytest.mark.parametrize(("served", "kind", "status"), [
    ("busy?fail=429", RateLimited, 429),
    ("gone?fail=404", ModelGone, 404),
    ("down?fail=503", UpstreamFailure, 503),
])
@pytest.mark.parametrize("stream", [False, True])
async def test_errors_map_to_the_error_tree(base, client, served, kind, status, stream):
    error = await raised(provider(base, client), served, kind, stream=stream)
    assert error.upstream_status == status


async def test_a_bad_key_is_a_400_with_its_reason(base, client):
    with pytest.raises(UpstreamFailure) as caught:
        await provider(base, client, key="nope").complete(ModelRequest("g", (user("hi"),)))
    assert caught.value.upstream_status == 400 and "API key not valid" in caught.value.message


async def test_an_error_line_mid_stream_raises(base, client):
    request = ModelRequest("g?fail=midstream", (user("a question"),))
    seen, error = await until_error(provider(base, client), request, UpstreamFailure)
    assert seen and error.upstream_status == 500 and "boom" in error.message


def test_a_named_tool_choice_and_max_completion_tokens_map_to_gemini_names():
    body = build_body(ModelRequest("g", (user("hi"),), tools=(WEATHER,),
                                   tool_choice={"type": "function", "function": {"name": "get_weather"}},
                                   options={"max_completion_tokens": 77, "top_k": 5}))
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}}
    assert body["generationConfig"] == {"topK": 5, "maxOutputTokens": 77}
