"""Issue 5: ``GET /v1/models`` is shared by three SDKs and each gets its own list shape, told apart
by the headers it always sends; a lookup by name likewise; unknown routes answer in the shape
of the API whose prefix they are under."""

from __future__ import annotations

import anthropic
import openai
import pytest
from google import genai
from google.genai import types

from tests.kits.dialect import panel, settings  # noqa: F401  (fixtures)

pytestmark = pytest.mark.usefixtures("panel")

LISTED = ["bench/core", "bench/core:merged", "bench/core:route", "bench/eyes", "bench/eyes:merged", "bench/eyes:route"]


def test_the_three_sdks_each_read_their_own_list(gateway, oai, ant, net):
    listed = oai.models.list().data
    assert [m.id for m in listed] == LISTED
    assert listed[0].model_extra["members"] == ["sage", "quill", "lark"]
    assert [m.id for m in ant.models.list()] == LISTED
    client = genai.Client(api_key="unused", http_options=types.HttpOptions(httpx_client=net.client2(), httpx_async_client=net.aclient2(), base_url=gateway))
    try:
        assert [m.name for m in client.models.list()] == [f"models/{n}" for n in LISTED]
    finally:
        client.close()


def test_lookups_by_name_in_each_sdk_shape(oai, ant):
    assert oai.models.retrieve("bench/core:merged").id == "bench/core:merged"
    assert ant.models.retrieve("core").id == "bench/core"
    with pytest.raises(anthropic.NotFoundError) as caught:
        ant.models.retrieve("bench/nowhere")
    assert caught.value.body["error"]["type"] == "not_found_error"
    with pytest.raises(openai.NotFoundError):
        oai.models.retrieve("bench/nowhere")


@pytest.fixture
def oai(gateway, net):
    with openai.OpenAI(http_client=net.client2(), base_url=gateway + "/v1", api_key="unused", max_retries=0) as client:
        yield client


@pytest.fixture
def ant(gateway, net):
    with anthropic.Anthropic(http_client=net.client2(), base_url=gateway, api_key="unused", max_retries=0) as client:
        yield client


@pytest.mark.parametrize(("headers", "params", "key"), [
    ({"x-goog-api-key": "k"}, {}, "models"),
    ({}, {"key": "k"}, "models"),
    ({"anthropic-version": "2023-06-01"}, {}, "has_more"),
    ({}, {}, "object"),
])
def test_shared_list_is_told_apart_by_headers(gateway, headers, params, key, http):
    body = http.get(gateway + "/v1/models", headers=headers, params=params).json()
    assert key in body


def test_a_bad_page_size_is_refused_in_the_asking_sdk_shape(gateway, http):
    r = http.get(gateway + "/v1/models", params={"limit": "0"}, headers={"anthropic-version": "2023-06-01"})
    assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error"
    r = http.get(gateway + "/v1beta/models", params={"pageToken": "elsewhere"})
    assert r.status_code == 400 and r.json()["error"]["status"] == "INVALID_ARGUMENT"


@pytest.mark.parametrize(("method", "path", "check"), [
    ("GET", "/v1beta/cachedContents", lambda b: b["error"]["status"] == "NOT_FOUND"),
    ("POST", "/v1/messages/batches", lambda b: b["error"]["type"] == "not_found_error"),
    ("GET", "/v1/responses/resp_123", lambda b: b["error"]["code"] == "404"),
    ("POST", "/api/embed", lambda b: "error" in b),
])
def test_unknown_routes_answer_in_their_api_shape(gateway, method, path, check, http):
    r = http.request(method, gateway + path, json={})
    assert r.status_code == 404 and check(r.json())


def test_a_stored_response_cannot_be_retrieved(oai):
    with pytest.raises(openai.NotFoundError):
        oai.responses.retrieve("resp_123")


def test_an_error_on_the_shared_model_list_takes_the_asking_sdks_shape(gateway, http):
    gemini = http.get(gateway + "/v1/models/nope", headers={"x-goog-api-key": "k"})
    anthropic_ = http.get(gateway + "/v1/models/nope", headers={"anthropic-version": "2023-06-01"})
    openai_ = http.get(gateway + "/v1/models/nope")
    assert gemini.status_code == anthropic_.status_code == openai_.status_code == 404
    assert gemini.json()["error"]["status"] == "NOT_FOUND"
    assert anthropic_.json()["type"] == "error"
    assert openai_.json()["error"]["type"] == "bench_gateway"


def test_a_guard_refusal_on_the_shared_model_list_takes_the_asking_sdks_shape(gateway, http):
    foreign = {"host": "evil.example:80"}
    anthropic_ = http.get(gateway + "/v1/models", headers={**foreign, "anthropic-version": "2023-06-01"})
    gemini = http.get(gateway + "/v1/models", headers={**foreign, "x-goog-api-key": "k"})
    assert anthropic_.status_code == gemini.status_code == 403
    assert anthropic_.json()["error"]["type"] == "permission_error"
    assert gemini.json()["error"]["status"] == "PERMISSION_DENIED"
