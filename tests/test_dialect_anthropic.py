"""Issue 5: a panel answers the anthropic SDK (2.x, Bearer) and the classic x-api-key clients,
whole and streamed, with its count route, model list and every refusal in Anthropic's shape."""

from __future__ import annotations

import anthropic
import anyio
import pytest

from benchwarmers_mcp.store import collections as collection_store
from benchwarmers_mcp.store.collections import GatewaySettings
from tests.kits import dialect as kit
from tests.kits.dialect import breaks_mid_stream, panel, settings  # noqa: F401  (fixtures)
from tests.kits.seed import seed
from tests.kits.store import store_of

pytestmark = pytest.mark.usefixtures("panel")


@pytest.fixture
def sdk(gateway, net):
    with anthropic.Anthropic(http_client=net.client2(), base_url=gateway, api_key="local-key", max_retries=0) as client:
        yield client


def ask(**extra):
    return {"model": "bench/core", "max_tokens": 512, "messages": [{"role": "user", "content": kit.QUESTION}],
            **extra}


def test_whole_reply_reads_every_seat(sdk):
    reply = sdk.messages.create(**ask(system="Be brief."))
    assert reply.model == "bench/core" and reply.stop_reason == "end_turn"
    text = reply.content[0].text
    kit.assert_every_seat(text)
    bench = reply.model_extra["bench"]
    assert [s["alias"] for s in bench["seats"]] == list(kit.MEMBERS)
    assert all(f"`{s['call']}`" in text for s in bench["seats"])
    assert reply.usage.input_tokens > 0 and reply.usage.output_tokens > 0


def test_stream_helper_reads_every_seat_and_bench(sdk):
    with sdk.messages.stream(**ask(system=[{"type": "text", "text": "Be brief."}])) as stream:
        events = list(stream)
        final = stream.get_final_message()
    kit.assert_every_seat(final.content[0].text)
    kinds = [e.type for e in events]
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    delta = next(e for e in events if e.type == "message_delta")
    assert delta.usage.output_tokens > 0
    assert {s["alias"] for s in delta.model_extra["bench"]["seats"]} == set(kit.MEMBERS)


def test_raw_stream_has_event_lines_and_ping_keepalives(gateway, http):
    with http.stream("POST", gateway + "/v1/messages", json=ask(stream=True), timeout=30,
                      headers={"x-api-key": "k", "anthropic-version": "2023-06-01"}) as r:
        body = r.read().decode()
    assert r.status_code == 200 and r.headers["x-bench-panel"]
    frames = [f for f in body.split("\n\n") if f.strip()]
    assert all(f.startswith("event: ") for f in frames), "the SDK drops any event without an event: line"
    assert any(f.startswith("event: ping\n") for f in frames), "a 0.2 s seat outlasts the 0.05 s keep-alive"


def test_old_style_x_api_key_client_and_old_version(gateway, net):
    with anthropic.Anthropic(http_client=net.client2(), base_url=gateway, auth_token="unused", max_retries=0,
                             default_headers={"x-api-key": "local-key", "Authorization": anthropic.Omit(),
                                              "anthropic-version": "2023-06-01"}) as old:
        reply = old.messages.create(**ask())
    kit.assert_every_seat(reply.content[0].text)


def test_images_as_base64_and_url_reach_seats_that_can_see(sdk):
    content = [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": kit.PNG}},
               {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}},
               {"type": "text", "text": "What is in these?"}]
    reply = sdk.messages.create(model="bench/eyes", max_tokens=100,
                                            messages=[{"role": "user", "content": content}])
    kit.assert_every_seat(reply.content[0].text, ("owl", "hawk"))


async def _no_explorers(home) -> None:
    async with store_of(home) as db:
        await collection_store.save_gateway_settings(db, GatewaySettings(max_calls=5, max_explorers=0))


def test_usage_is_the_members_own_when_they_report_it(home, upstream, fake, sdk):
    """Every seat on the fake upstream, which reports usage: the reply counts what they said."""
    seed(home, base_url=upstream, served=["alpha", "beta"], collections={"real": ["alpha", "beta"]})
    anyio.run(_no_explorers, home)
    reply = sdk.messages.create(**{**ask(), "model": "bench/real"})
    assert len(fake.calls) == 2
    assert reply.usage.input_tokens == sum(c.tokens_in for c in fake.calls)
    assert reply.usage.output_tokens == sum(c.tokens_out for c in fake.calls)


def test_count_tokens_is_the_estimate(sdk):
    text = "x" * 400
    counted = sdk.messages.count_tokens(model="bench/core", system="s" * 40,
                                                    messages=[{"role": "user", "content": text}])
    assert counted.input_tokens == int(440 / 4 * 1.1)


def test_model_list_in_anthropic_shape(sdk):
    ids = [m.id for m in sdk.models.list()]
    assert ids == ["bench/core", "bench/core:merged", "bench/core:route",
                   "bench/eyes", "bench/eyes:merged", "bench/eyes:route"]
    page = sdk.models.list(limit=2)
    assert [m.id for m in page.data] == ids[:2] and page.has_more


REFUSALS = [
    (dict(tools=[{"name": "grep", "description": "search", "input_schema": {"type": "object"}}]),
     anthropic.BadRequestError, "route mode"),
    (dict(tools=[{"type": "web_search_20250305", "name": "web_search"}]), anthropic.BadRequestError,
     "hosted tool"),
    (dict(messages=[{"role": "user", "content": [
        {"type": "image", "source": {"type": "file", "file_id": "file_123"}}]}]),
     anthropic.BadRequestError, "file ids"),
    (dict(messages=[{"role": "user", "content": "hi"},
                    {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "grep", "input": {}}]},
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "found"}]}]),
     anthropic.BadRequestError, "route mode"),
    (dict(model="bench/nowhere"), anthropic.NotFoundError, "nowhere"),
    (dict(model=""), anthropic.BadRequestError, "no model named"),
]


@pytest.mark.parametrize(("change", "error", "words"), REFUSALS)
def test_refusals_raise_the_sdk_error_with_the_gateway_message(sdk, change, error, words):
    with pytest.raises(error) as caught:
        sdk.messages.create(**{**ask(), **change})
    assert words in caught.value.body["error"]["message"]
    assert caught.value.body["type"] == "error"


@pytest.mark.usefixtures("breaks_mid_stream")
def test_mid_stream_failure_raises_in_the_stream(sdk):
    with pytest.raises(anthropic.APIStatusError) as caught:
        with sdk.messages.stream(**ask()) as stream:
            for _ in stream:
                pass
    assert kit.MID_STREAM in str(caught.value.body)


def test_unknown_route_under_messages_is_anthropic_shaped(gateway, http):
    r = http.post(gateway + "/v1/messages/batches", json={}, timeout=10)
    assert r.status_code == 404
    assert r.json()["type"] == "error" and r.json()["error"]["type"] == "not_found_error"
