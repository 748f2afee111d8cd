"""Route mode through google-genai: a functionCall (its id made by the member, echoed back in the
functionResponse), upper-case schema types lowered for the member, whole and streamed, and the
record in headers (Gemini's body has no room for ``bench``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from google import genai
from google.genai import types

from benchwarmers_mcp.settings import Settings
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.loopback import Loopback
from tests.kits.route import route_server, said, seed_members, tool_call

WEATHER = types.Tool(function_declarations=[types.FunctionDeclaration(
    name="get_weather", description="Weather in a city",
    parameters=types.Schema(type=types.Type.OBJECT, properties={"city": types.Schema(type=types.Type.STRING)},
                            required=["city"]))])


@pytest.fixture
def gclient(settings: Settings, home: Path, upstream: str, net: Loopback):
    seed_members(home, upstream, {"alpha": "alpha"}, {"agents": ["alpha"]})
    with route_server(net, settings) as base:
        client = genai.Client(api_key="unused", http_options=types.HttpOptions(httpx_client=net.client2(), httpx_async_client=net.aclient2(), base_url=base))
        yield client
        client.close()


def test_function_call_loop_whole(gclient: genai.Client, fake: FakeUpstream) -> None:
    fake.script["alpha"] += [tool_call("call_g1", "get_weather", {"city": "Cairo"}), said("Cairo: 30C.")]
    config = types.GenerateContentConfig(tools=[WEATHER], system_instruction="Weather agent.")
    contents = [types.Content(role="user", parts=[types.Part(text="Weather in Cairo?")])]
    first = gclient.models.generate_content(model="bench/agents:route", contents=contents, config=config)
    (call,) = first.function_calls
    assert (call.id, call.name, call.args) == ("call_g1", "get_weather", {"city": "Cairo"})
    headers = first.sdk_http_response.headers
    assert headers["x-bench-model"] == "alpha" and headers["x-bench-call"] == headers["x-bench-conversation"] + ".1"
    schema = fake.calls[-1].body["tools"][0]["function"]["parameters"]
    assert schema["type"] == "object" and schema["properties"]["city"]["type"] == "string"

    contents += [first.candidates[0].content, types.Content(role="user", parts=[types.Part(
        function_response=types.FunctionResponse(id=call.id, name="get_weather", response={"temp_c": 30}))])]
    second = gclient.models.generate_content(model="bench/agents:route", contents=contents, config=config)
    assert second.text == "Cairo: 30C." and second.usage_metadata.prompt_token_count > 0
    sent = fake.calls[-1].body["messages"]
    assert sent[-2]["tool_calls"][0]["id"] == "call_g1" and sent[-1]["tool_call_id"] == "call_g1"


def test_function_call_streamed(gclient: genai.Client, fake: FakeUpstream) -> None:
    fake.script["alpha"] += [{**tool_call("call_g2", "get_weather", {"city": "Lagos"}), "content": "One moment."}]
    chunks = list(gclient.models.generate_content_stream(
        model="bench/agents:route", contents="Weather in Lagos?", config=types.GenerateContentConfig(tools=[WEATHER])))
    assert "".join(c.text or "" for c in chunks if not c.function_calls) == "One moment."
    calls = [f for c in chunks for f in (c.function_calls or [])]
    assert [(f.name, f.args) for f in calls] == [("get_weather", {"city": "Lagos"})]
    assert chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP
    assert chunks[-1].usage_metadata.total_token_count > 0
