"""Issue 2: each refusal, in OpenAI's error shape with the right status, read by the openai SDK."""

from __future__ import annotations

import openai
import pytest

from tests.kits.seed import seed
from tests.kits.store import store_of


@pytest.fixture
def sdk(home, upstream, gateway, net):
    seed(home, base_url=upstream, served={"fast": "fast", "tiny": "tiny"}, collections={"core": ["fast"]})
    seed(home, base_url=upstream, served={}, collections={"small": ["tiny"]}, endpoint="fake")
    return openai.OpenAI(http_client=net.client2(), base_url=gateway + "/v1", api_key="unused", max_retries=0)


def ask(sdk, **kwargs):
    kwargs.setdefault("messages", [{"role": "user", "content": "hi"}])
    return sdk.chat.completions.create(**kwargs)


def test_no_model_is_400(sdk):
    with pytest.raises(openai.BadRequestError) as e:
        ask(sdk, model="")
    assert "no model named" in e.value.message


def test_unknown_collection_is_404_listing_collections(sdk):
    with pytest.raises(openai.NotFoundError) as e:
        ask(sdk, model="bench/nope")
    assert "bench/core" in e.value.message and "bench/small" in e.value.message


def test_tools_on_a_panel_point_to_route_mode(sdk):
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    with pytest.raises(openai.BadRequestError) as e:
        ask(sdk, model="bench/core", tools=tools)
    assert "bench/core:route" in e.value.message


def test_empty_tools_list_is_no_tools(sdk):
    assert ask(sdk, model="bench/core", tools=[]).model_extra["bench"]["seats"]


def test_body_not_json_not_object_wrong_type_too_big(sdk, gateway, http):
    url = gateway + "/v1/chat/completions"
    bad = http.post(url, content=b"{nope", headers={"Content-Type": "application/json"})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == 400
    array = http.post(url, json=[1, 2])
    assert array.status_code == 400
    form = http.post(url, data={"model": "bench/core"})
    assert form.status_code == 415 and form.json()["error"]["type"] == "bench_gateway"
    huge = http.post(url, content=b"x" * 20_000_001, headers={"Content-Type": "application/json"})
    assert huge.status_code == 413


def test_prompt_larger_than_a_members_window_is_413(home, sdk):
    import anyio

    from benchwarmers_mcp.store import models

    async def shrink():
        async with store_of(home) as db:
            await models.update(db, "tiny", context_window=100)

    anyio.run(shrink)
    with pytest.raises(openai.APIStatusError) as e:
        ask(sdk, model="bench/small", messages=[{"role": "user", "content": "word " * 200}])
    assert e.value.status_code == 413 and "tiny (100 tokens)" in e.value.message


def test_nobody_seatable_is_503(home, sdk):
    import anyio

    from benchwarmers_mcp.store import collections as cs
    from benchwarmers_mcp.store import models

    async def empty():
        async with store_of(home) as db:
            await cs.save_gateway_settings(db, cs.GatewaySettings(max_calls=5, max_explorers=0))
            await models.retire(db, "tiny", "test")

    anyio.run(empty)
    with pytest.raises(openai.InternalServerError) as e:
        ask(sdk, model="bench/small")
    assert e.value.status_code == 503
    assert "tiny" in str(e.value.body) or "nobody" in e.value.message


def test_image_without_seeing_seat_is_400(sdk):
    image = {"type": "image_url", "image_url": {"url": "https://example.invalid/cat.png"}}
    with pytest.raises(openai.BadRequestError) as e:
        ask(sdk, model="bench/core", messages=[{"role": "user", "content": [{"type": "text", "text": "what"}, image]}])
    assert "see" in e.value.message


def test_bad_image_scheme_and_part_type(sdk):
    with pytest.raises(openai.BadRequestError):
        ask(sdk, model="bench/core", messages=[{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "file:///etc/passwd"}}]}])
    with pytest.raises(openai.BadRequestError):
        ask(sdk, model="bench/core", messages=[{"role": "user", "content": [{"type": "input_image"}]}])


def test_unknown_route_is_404_json(gateway, http):
    r = http.get(gateway + "/v1/nothing-here")
    assert r.status_code == 404 and "no route" in r.json()["error"]["message"]
