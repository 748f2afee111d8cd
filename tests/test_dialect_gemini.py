"""Issue 5: a panel answers google-genai 3.x (which calls /v1) and v1beta clients, whole and
streamed, with the call ids in headers, count and list routes, and refusals as genai errors."""

from __future__ import annotations

import json

import pytest
from google import genai
from google.genai import errors, types

from tests.kits import dialect as kit
from tests.kits.dialect import breaks_mid_stream, panel, settings  # noqa: F401  (fixtures)

pytestmark = pytest.mark.usefixtures("panel")


@pytest.fixture
def gclient(gateway, net):
    client = genai.Client(api_key="unused", http_options=types.HttpOptions(httpx_client=net.client2(), httpx_async_client=net.aclient2(), base_url=gateway))
    yield client
    client.close()


def seats_of(response) -> list[dict]:
    return json.loads(response.sdk_http_response.headers["x-bench-seats"])


def test_whole_reply_reads_every_seat_and_the_headers_name_the_calls(gclient):
    reply = gclient.models.generate_content(
        model="bench/core", contents=kit.QUESTION,
        config=types.GenerateContentConfig(system_instruction="Be brief."))
    kit.assert_every_seat(reply.text)
    headers = reply.sdk_http_response.headers
    seats = seats_of(reply)
    assert [s["alias"] for s in seats] == list(kit.MEMBERS)
    assert all(s["call"].startswith(headers["x-bench-panel"] + ".") and s["status"] == "ok" for s in seats)
    assert reply.usage_metadata.prompt_token_count > 0 and reply.usage_metadata.candidates_token_count > 0
    assert reply.candidates[0].finish_reason == types.FinishReason.STOP


def test_stream_reads_every_seat(gclient):
    chunks = list(gclient.models.generate_content_stream(model="bench/core", contents=kit.QUESTION))
    kit.assert_every_seat("".join(c.text or "" for c in chunks))
    assert any(c.text == "" for c in chunks), "keep-alives are chunks with empty text"
    assert chunks[-1].usage_metadata.total_token_count > 0


def test_v1beta_and_model_prefix_and_reply_suffix(gateway, net):
    client = genai.Client(api_key="unused", http_options=types.HttpOptions(httpx_client=net.client2(), httpx_async_client=net.aclient2(), base_url=gateway, api_version="v1beta"))
    try:
        reply = client.models.generate_content(model="models/bench/core:all", contents=kit.QUESTION)
    finally:
        client.close()
    kit.assert_every_seat(reply.text)


def test_inline_and_file_url_images_reach_seats_that_can_see(gateway, http):
    body = {"contents": [{"role": "user", "parts": [
        {"inline_data": {"mime_type": "image/png", "data": kit.PNG}},
        {"fileData": {"mimeType": "image/jpeg", "fileUri": "https://example.com/cat.jpg"}},
        {"text": "What is in these?"}]}], "generation_config": {"max_output_tokens": 50}}
    r = http.post(gateway + "/v1beta/models/bench/eyes:generateContent?key=unused", json=body)
    assert r.status_code == 200
    kit.assert_every_seat(r.json()["candidates"][0]["content"]["parts"][0]["text"], ("owl", "hawk"))


def test_without_alt_sse_the_stream_is_one_json_array(gateway, http):
    r = http.post(gateway + "/v1beta/models/bench/core:streamGenerateContent",
                   json={"contents": [{"parts": [{"text": kit.QUESTION}]}]})
    assert r.status_code == 200 and r.headers["x-bench-panel"]
    chunks = r.json()
    assert isinstance(chunks, list)
    kit.assert_every_seat("".join(c["candidates"][0]["content"]["parts"][0]["text"] for c in chunks))
    assert [s["status"] for s in json.loads(r.headers["x-bench-seats"])] == ["pending"] * 3


def test_sse_stream_is_bare_data_lines(gateway, http):
    with http.stream("POST", gateway + "/v1/models/bench/core:streamGenerateContent?alt=sse",
                      json={"contents": [{"parts": [{"text": kit.QUESTION}]}]}) as r:
        body = r.read().decode()
    frames = [f for f in body.split("\n\n") if f]
    assert all(f.startswith("data: {") and "\n" not in f for f in frames)


def test_count_tokens_and_model_list_and_lookup(gclient):
    counted = gclient.models.count_tokens(model="bench/core", contents="x" * 400)
    assert counted.total_tokens == int(400 / 4 * 1.1)
    names = [m.name for m in gclient.models.list()]
    assert names[:3] == ["models/bench/core", "models/bench/core:merged", "models/bench/core:route"]
    model = gclient.models.get(model="bench/eyes")
    assert model.name == "models/bench/eyes" and "generateContent" in model.supported_actions


def test_model_list_pages(gateway, http):
    first = http.get(gateway + "/v1beta/models", params={"pageSize": 4}).json()
    rest = http.get(gateway + "/v1beta/models", params={"pageToken": first["nextPageToken"]}).json()
    assert len(first["models"]) == 4 and len(rest["models"]) == 2 and "nextPageToken" not in rest


def _declare(name: str) -> types.Tool:
    return types.Tool(function_declarations=[types.FunctionDeclaration(
        name=name, description="search", parameters=types.Schema(type="OBJECT", properties={
            "q": types.Schema(type="STRING")}))])


REFUSALS = [
    (dict(config=types.GenerateContentConfig(tools=[_declare("grep")])), 400, "route mode"),
    (dict(config=types.GenerateContentConfig(tools=[types.Tool(google_search=types.GoogleSearch())])), 400,
     "hosted tool"),
    (dict(contents=[types.Part.from_bytes(data=b"%PDF-1.7", mime_type="application/pdf"), "summarise"]), 400,
     "application/pdf"),
    (dict(contents=[types.Part.from_uri(file_uri="https://generativelanguage.googleapis.com/v1beta/files/abc",
                                        mime_type="image/png"), "what is it"]), 400, "Files API"),
    (dict(model="bench/nowhere"), 404, "nowhere"),
]


@pytest.mark.parametrize(("change", "code", "words"), REFUSALS)
def test_refusals_raise_client_errors_with_the_gateway_message(gclient, change, code, words):
    with pytest.raises(errors.ClientError) as caught:
        gclient.models.generate_content(**{"model": "bench/core", "contents": kit.QUESTION, **change})
    assert caught.value.code == code and words in caught.value.message


def test_unknown_method_is_not_found_in_gemini_shape(gateway, http):
    r = http.post(gateway + "/v1beta/models/bench/core:embedContent", json={})
    assert r.status_code == 404 and r.json()["error"]["status"] == "NOT_FOUND"


@pytest.mark.usefixtures("breaks_mid_stream")
def test_mid_stream_failure_raises_server_error(gclient):
    with pytest.raises(errors.APIError) as caught:
        for _ in gclient.models.generate_content_stream(model="bench/core", contents=kit.QUESTION):
            pass
    assert kit.MID_STREAM in caught.value.message and caught.value.code == 502


@pytest.mark.usefixtures("breaks_mid_stream")
def test_mid_stream_failure_is_the_last_array_element(gateway, http):
    r = http.post(gateway + "/v1beta/models/bench/core:streamGenerateContent",
                   json={"contents": [{"parts": [{"text": kit.QUESTION}]}]})
    assert r.json()[-1] == {"error": {"code": 502, "message": kit.MID_STREAM, "status": "UNAVAILABLE"}}
