"""Facts learned from a model's own errors, through the gateway, judged by the official openai SDK:
a context-length error lowers the window and the next over-long prompt is refused before any
upstream call; "tools not supported" turns tools off and the route turn fails over."""

from __future__ import annotations

import openai
import pytest

from benchwarmers_mcp.settings import Settings
from tests.catalog.kit import (
    FakeProvider,
    Outbound,
    add_endpoint,
    calls_tool,
    facts_of,
    gateway,
    no_tools,
    post,
    register,
    said,
    window,
)

pytestmark = pytest.mark.anyio

WEATHER = {"type": "function", "function": {"name": "weather", "description": "the weather in a city",
                                             "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                            "required": ["city"]}}}


def sdk(api) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=str(api.base_url) + "/v1", api_key="none", http_client=api, max_retries=0)


async def test_a_context_length_error_lowers_the_window_and_the_next_long_prompt_never_leaves(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeProvider(replies={"house-model": window(1000, said("fits"))})
    async with gateway(settings, Outbound({"fake.local": fake.app()}), monkeypatch) as api:
        await add_endpoint(api, "house", "http://fake.local/v1")
        model = await register(api, "house-model", "house")
        assert model["context_window"] is None  # unknown to the catalog
        await post(api, "/api/collection", {"name": "solo", "members": [model["alias"]]}, 201)
        client = sdk(api)
        long_prompt = "word " * 1600  # ~2,000 tokens
        first = await client.chat.completions.create(model="bench/solo",
                                                     messages=[{"role": "user", "content": long_prompt}])
        seat = first.model_extra["bench"]["seats"][0]
        assert seat["status"] == "error" and "maximum context length is 1000" in seat["error"]
        assert fake.count() == 1
        learned = (await facts_of(api, model["alias"]))["facts"]["context_window"]
        assert learned["value"] == 1000 and learned["source"] == "learned"
        assert "maximum context length is 1000 tokens" in learned["evidence"]

        with pytest.raises(openai.APIStatusError) as refused:
            await client.chat.completions.create(model="bench/solo", messages=[{"role": "user", "content": long_prompt}])
        assert refused.value.status_code == 413 and "1,000 tokens" in refused.value.message
        assert fake.count() == 1  # refused before any upstream call
        short = await client.chat.completions.create(model="bench/solo", messages=[{"role": "user", "content": "hi"}])
        assert "fits" in short.choices[0].message.content and fake.count() == 2


async def test_a_route_tool_turn_to_a_member_whose_tool_support_is_unknown(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeProvider(replies={"house-model": calls_tool("weather", {"city": "Oslo"})})
    async with gateway(settings, Outbound({"fake.local": fake.app()}), monkeypatch) as api:
        await add_endpoint(api, "house", "http://fake.local/v1")
        model = await register(api, "house-model", "house")
        assert model["tools"] is None
        await post(api, "/api/collection", {"name": "agents", "members": [model["alias"]], "reply": "route"}, 201)
        reply = await sdk(api).chat.completions.create(
            model="bench/agents", messages=[{"role": "user", "content": "weather in Oslo?"}], tools=[WEATHER])
        assert reply.choices[0].message.tool_calls[0].function.name == "weather"
        shown = (await facts_of(api, model["alias"]))["facts"]["tools"]
        assert (shown["value"], shown["source"]) == (True, "learned")  # it called one: now it is known


async def test_a_member_that_answers_tools_not_supported_fails_over_and_is_learned(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeProvider(replies={"house-small:7b": no_tools("house-small:7b", said("plain words")),
                                 "helper": calls_tool("weather", {"city": "Lima"})})
    async with gateway(settings, Outbound({"fake.local": fake.app()}), monkeypatch) as api:
        await add_endpoint(api, "house", "http://fake.local/v1")
        first = await register(api, "house-small:7b", "house")
        second = await register(api, "helper", "house")
        assert first["tools"] is None and second["tools"] is None
        await post(api, "/api/collection", {"name": "agents", "members": [first["alias"], second["alias"]],
                                            "reply": "route"}, 201)
        client = sdk(api)
        messages = [{"role": "user", "content": "weather in Lima?"}]
        reply = await client.chat.completions.create(model="bench/agents", messages=messages, tools=[WEATHER])
        assert reply.choices[0].message.tool_calls[0].function.arguments == '{"city": "Lima"}'
        bench = reply.model_extra["bench"]
        assert bench["alias"] == second["alias"] and bench["failed_over"][0]["alias"] == first["alias"]
        taught = (await facts_of(api, first["alias"]))["facts"]["tools"]
        assert (taught["value"], taught["source"]) == (False, "learned") and "does not support tools" in taught["evidence"]
        assert fake.count("house-small:7b") == 1

        again = await client.chat.completions.create(model="bench/agents", tools=[WEATHER],
                                                     messages=[{"role": "user", "content": "and in Quito?"}])
        assert again.model_extra["bench"]["alias"] == second["alias"]
        assert fake.count("house-small:7b") == 1  # known now: never asked with tools again
        skipped = {s["alias"]: s["why"] for s in again.model_extra["bench"].get("skipped", [])}
        assert "does not call tools" in skipped[first["alias"]]
        models = (await api.get("/api/models")).json()["models"]
        assert next(m for m in models if m["alias"] == first["alias"])["status"] != "retired"  # not retired as gone


async def test_members_known_to_call_tools_go_first(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeProvider(replies={"unsure": calls_tool("weather", {"city": "A"}),
                                 "sure": calls_tool("weather", {"city": "B"})})
    async with gateway(settings, Outbound({"fake.local": fake.app()}), monkeypatch) as api:
        await add_endpoint(api, "house", "http://fake.local/v1")
        unsure = await register(api, "unsure", "house")
        sure = await register(api, "sure", "house", tools=True)
        await post(api, "/api/collection", {"name": "agents", "members": [unsure["alias"], sure["alias"]],
                                            "reply": "route"}, 201)
        reply = await sdk(api).chat.completions.create(
            model="bench/agents", messages=[{"role": "user", "content": "go"}], tools=[WEATHER])
        assert reply.model_extra["bench"]["alias"] == sure["alias"]
        assert fake.count("unsure") == 0
