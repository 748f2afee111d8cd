"""Issue 37.1: every raw reply, whole and streamed, in every dialect, against the official SDK's
own models walked strictly (``tests.kits.conform``): no undeclared key, no required field missing,
no value of the wrong type, every stream framed and ordered as its clients expect. The SDK round
trips elsewhere are lenient; these are not, and they do not ask the gateway's renderers what a
reply should look like.

Panels (all, merged) on simulated members, route turns (text and a tool call) on the fake
OpenAI-compatible upstream, and the errors each dialect answers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchwarmers_mcp.settings import Settings
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits import dialect as kit
from tests.kits.dialect import panel, settings  # noqa: F401  (fixtures)
from tests.kits.loopback import Loopback
from tests.kits.route import FAST, route_server, said, seed_members, tool_call
from tests.kits.waits import ANSWER
from tests.kits.wire_check import DIALECTS, check_error, check_stream, check_whole

WEATHER_CHAT = {"type": "function", "function": {
    "name": "get_weather", "description": "Weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


def request(dialect: str, model: str, *, stream: bool, tools: bool = False) -> tuple[str, dict[str, Any]]:
    """The path and body of one question in ``dialect`` to ``model``."""
    text = kit.QUESTION
    if dialect == "chat":
        body: dict[str, Any] = {"model": model, "messages": [{"role": "user", "content": text}], "stream": stream}
        if tools:
            body["tools"] = [WEATHER_CHAT]
        return "/v1/chat/completions", body
    if dialect == "responses":
        body = {"model": model, "input": text, "stream": stream}
        if tools:
            body["tools"] = [{"type": "function", **WEATHER_CHAT["function"]}]
        return "/v1/responses", body
    if dialect == "anthropic":
        body = {"model": model, "max_tokens": 512, "messages": [{"role": "user", "content": text}], "stream": stream}
        if tools:
            fn = WEATHER_CHAT["function"]
            body["tools"] = [{"name": fn["name"], "description": fn["description"], "input_schema": fn["parameters"]}]
        return "/v1/messages", body
    if dialect == "gemini":
        action = "streamGenerateContent?alt=sse&key=unused" if stream else "generateContent?key=unused"
        body = {"contents": [{"role": "user", "parts": [{"text": text}]}]}
        if tools:
            fn = WEATHER_CHAT["function"]
            body["tools"] = [{"functionDeclarations": [{"name": fn["name"], "description": fn["description"],
                                                        "parameters": fn["parameters"]}]}]
        return f"/v1beta/models/{model}:{action}", body
    body = {"model": model, "messages": [{"role": "user", "content": text}], "stream": stream}
    if tools:
        body["tools"] = [WEATHER_CHAT]
    return "/api/chat", body


def ask(http: httpx.Client, base: str, dialect: str, model: str, *, stream: bool, tools: bool = False) -> str:
    path, body = request(dialect, model, stream=stream, tools=tools)
    headers = {"x-api-key": "k", "anthropic-version": "2023-06-01"} if dialect == "anthropic" else {}
    with http.stream("POST", base + path, json=body, headers=headers, timeout=ANSWER) as r:
        raw = r.read().decode()
    assert r.status_code == 200, raw[:400]
    return raw


def verdict(dialect: str, raw: str, *, stream: bool) -> list[str]:
    spec = DIALECTS[dialect]
    return check_stream(spec, raw) if stream else check_whole(spec, json.loads(raw))


@pytest.mark.usefixtures("panel")
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("reply", ["", ":merged"], ids=["all", "merged"])
@pytest.mark.parametrize("dialect", list(DIALECTS))
def test_a_panel_reply_conforms(gateway: str, http: httpx.Client, dialect: str, reply: str, stream: bool) -> None:
    raw = ask(http, gateway, dialect, "bench/core" + reply, stream=stream)
    found = verdict(dialect, raw, stream=stream)
    assert not found, "\n".join(found)


@pytest.fixture
def route_base(settings: Settings, home: Path, upstream: str, net: Loopback):  # noqa: F811
    seed_members(home, upstream, {"alpha": "alpha"}, {"agents": ["alpha"]}, max_output=4096,
                 context_window=100_000)
    with route_server(net, settings, FAST) as url:
        yield url


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("dialect", list(DIALECTS))
def test_a_route_turn_conforms(route_base: str, http: httpx.Client, fake: FakeUpstream, dialect: str,
                               stream: bool) -> None:
    fake.script["alpha"] += [said("It is 21C in Paris.")]
    raw = ask(http, route_base, dialect, "bench/agents:route", stream=stream)
    found = verdict(dialect, raw, stream=stream)
    assert not found, "\n".join(found)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("dialect", list(DIALECTS))
def test_a_route_tool_call_conforms(route_base: str, http: httpx.Client, fake: FakeUpstream, dialect: str,
                                    stream: bool) -> None:
    fake.script["alpha"] += [tool_call("call_w1", "get_weather", {"city": "Paris"})]
    raw = ask(http, route_base, dialect, "bench/agents:route", stream=stream, tools=True)
    found = verdict(dialect, raw, stream=stream)
    assert not found, "\n".join(found)
    assert "get_weather" in raw


@pytest.mark.usefixtures("panel")
@pytest.mark.parametrize("dialect", list(DIALECTS))
def test_errors_conform(gateway: str, http: httpx.Client, dialect: str) -> None:
    """An unknown collection, a body that is not JSON and one that is not an object: each in the
    dialect's own error shape, and nothing else in it."""
    spec = DIALECTS[dialect]
    path, body = request(dialect, "bench/nowhere", stream=False)
    headers = {"x-api-key": "k", "anthropic-version": "2023-06-01", "content-type": "application/json"}
    answers = [http.post(gateway + path, json=body, headers=headers, timeout=ANSWER),
               http.post(gateway + path, content=b"{not json", headers=headers, timeout=ANSWER),
               http.post(gateway + path, content=b"[1, 2]", headers=headers, timeout=ANSWER)]
    for r in answers:
        assert 400 <= r.status_code < 500, r.text
        found = check_error(spec, r.json())
        assert not found, "\n".join([r.text, *found])


def test_the_checker_refuses_the_breaks_the_sdks_let_through() -> None:
    """The breaks issue 37 found slipping past the SDKs: each is a problem here."""
    completion = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "bench/core",
                  "choices": [{"index": 0, "finish_reason": "stop",
                               "message": {"role": "assistant", "content": "hi"}}]}
    assert check_whole(DIALECTS["chat"], completion) == []
    assert any("object" in p for p in check_whole(DIALECTS["chat"], {k: v for k, v in completion.items()
                                                                     if k != "object"}))
    assert any("surprise" in p for p in check_whole(DIALECTS["chat"], {**completion, "surprise": 1}))
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "bench/core",
               "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn", "stop_sequence": None,
               "usage": {"input_tokens": 1, "output_tokens": 1}}
    assert check_whole(DIALECTS["anthropic"], message) == []
    for key in ("type", "role"):
        assert check_whole(DIALECTS["anthropic"], {k: v for k, v in message.items() if k != key})
    assert check_whole(DIALECTS["anthropic"], {**message, "stop_reason": "done"})
    stream = ('data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":'
              '[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}\n\n')
    assert check_stream(DIALECTS["chat"], stream + "data: [DONE]\n\n") == []
    assert check_stream(DIALECTS["chat"], stream) == ["chat: the stream does not end with data: [DONE]"]
