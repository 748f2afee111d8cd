"""Issue 5: a panel answers the openai SDK's Responses API and legacy completions, whole and
streamed, and refuses what it cannot honour with openai's own error classes."""

from __future__ import annotations

import openai
import pytest

from tests.kits import dialect as kit
from tests.kits.dialect import breaks_mid_stream, panel, settings  # noqa: F401  (fixtures)

pytestmark = pytest.mark.usefixtures("panel")


@pytest.fixture
def sdk(gateway, net):
    with openai.OpenAI(http_client=net.client2(), base_url=gateway + "/v1", api_key="unused", max_retries=0) as client:
        yield client


def test_responses_whole_reply_reads_every_seat(sdk):
    reply = sdk.responses.create(model="bench/core", instructions="Be brief.", input=kit.QUESTION)
    kit.assert_every_seat(reply.output_text)
    assert reply.status == "completed" and reply.store is False and reply.model == "bench/core"
    bench = reply.model_extra["bench"]
    assert [s["alias"] for s in bench["seats"]] == list(kit.MEMBERS)
    assert reply.usage.input_tokens > 0 and reply.usage.output_tokens > 0


def test_responses_stream_helper_reads_every_seat_and_bench(sdk):
    items = [{"role": "user", "content": [{"type": "input_text", "text": kit.QUESTION}]}]
    with sdk.responses.stream(model="bench/core", input=items) as stream:
        events = list(stream)
        final = stream.get_final_response()
    kit.assert_every_seat(final.output_text)
    assert final.model_extra["bench"]["panel"] in final.output_text
    numbers = [e.sequence_number for e in events]
    assert numbers == list(range(len(numbers)))
    assert events[0].type == "response.created" and events[-1].type == "response.completed"


def test_responses_merged_reply_whole_and_streamed(sdk):
    whole = sdk.responses.create(model="bench/core:merged", input=kit.QUESTION)
    assert "Merged by " in whole.output_text and whole.model_extra["bench"]["reply"] == "merged"
    with sdk.responses.stream(model="bench/core", input=kit.QUESTION,
                              extra_body={"bench": {"reply": "merged"}}) as stream:
        deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert len(deltas) == 1, "merged mode sends one piece once the merge is done"
    assert deltas[0] == final.output_text and final.model_extra["bench"]["merger"]["status"] == "ok"


def test_responses_image_reaches_seats_that_can_see(sdk):
    image = {"type": "input_image", "image_url": f"data:image/png;base64,{kit.PNG}"}
    items = [{"role": "user", "content": [{"type": "input_text", "text": "What is this?"}, image]}]
    reply = sdk.responses.create(model="bench/eyes", input=items)
    kit.assert_every_seat(reply.output_text, ("owl", "hawk"))


def test_responses_raw_stream_keeps_alive_with_comments(gateway, http):
    with http.stream("POST", gateway + "/v1/responses",
                      json={"model": "bench/core", "input": "hi", "stream": True}) as r:
        body = r.read().decode()
    assert ": keep-alive\n\n" in body
    assert "data: [DONE]" not in body
    assert body.rstrip().splitlines()[-2] == "event: response.completed"


RESPONSES_REFUSALS = [
    (dict(previous_response_id="resp_123"), "previous_response_id"),
    (dict(conversation="conv_123"), "conversation"),
    (dict(tools=[{"type": "function", "name": "grep"}, {"type": "web_search"}]), "route mode"),
    (dict(tools=[{"type": "function", "name": "grep", "parameters": {"type": "object"}}]), "route mode"),
    (dict(tools=[{"type": "custom", "name": "apply_patch", "description": "patch"}]), "route mode"),
    (dict(input=[{"role": "user", "content": [{"type": "input_file", "file_id": "file_1"}]}]), "input_file"),
    (dict(input=[{"role": "user", "content": [{"type": "input_image", "file_id": "file_1"}]}]), "file ids"),
    (dict(input=[{"role": "user", "content": "hi"},
                 {"type": "function_call", "call_id": "c1", "name": "grep", "arguments": "{}"},
                 {"type": "function_call_output", "call_id": "c1", "output": "found"}]), "route mode"),
]


@pytest.mark.parametrize(("change", "words"), RESPONSES_REFUSALS)
def test_responses_refusals_raise_bad_request_with_the_gateway_message(sdk, change, words):
    with pytest.raises(openai.BadRequestError) as caught:
        sdk.responses.create(**{"model": "bench/core", "input": "hi", **change})
    assert words in caught.value.message
    assert caught.value.body["type"] == "invalid_request_error" and caught.value.body["code"] == "400"


def test_responses_panel_leaves_hosted_tools_out_and_lists_them(sdk):
    reply = sdk.responses.create(model="bench/core", input="hi",
                                 tools=[{"type": "web_search", "external_web_access": False}])
    assert reply.status == "completed" and reply.output_text
    assert reply.model_extra["bench"]["dropped_tools"] == [
        {"type": "web_search", "why": "OpenAI's web search runs on OpenAI's servers"}]


def test_responses_unknown_collection_is_not_found(sdk):
    with pytest.raises(openai.NotFoundError) as caught:
        sdk.responses.create(model="bench/nowhere", input="hi")
    assert "bench/core" in caught.value.message, "the message lists the collections there are"


@pytest.mark.usefixtures("breaks_mid_stream")
def test_responses_mid_stream_failure_is_an_error_event_then_failed(sdk):
    events = list(sdk.responses.create(model="bench/core", input="hi", stream=True))
    error, failed = events[-2], events[-1]
    assert error.type == "error" and kit.MID_STREAM in error.message
    assert failed.type == "response.failed" and failed.response.error.message == kit.MID_STREAM


def test_completions_whole_and_streamed(sdk):
    whole = sdk.completions.create(model="bench/core", prompt=kit.QUESTION)
    kit.assert_every_seat(whole.choices[0].text)
    assert whole.object == "text_completion" and whole.model_extra["bench"]["collection"] == "bench/core"
    chunks = list(sdk.completions.create(model="bench/core", prompt=[kit.QUESTION], stream=True))
    kit.assert_every_seat("".join(c.choices[0].text for c in chunks))
    assert chunks[-1].choices[0].finish_reason == "stop" and chunks[-1].model_extra["bench"]


COMPLETIONS_REFUSALS = [
    (dict(prompt=["one", "two"]), "more than one prompt"),
    (dict(prompt=[1, 2, 3]), "token ids"),
    (dict(prompt="hi", suffix="end"), "suffix"),
    (dict(prompt="hi", echo=True), "echo"),
    (dict(prompt=""), "prompt"),
]


@pytest.mark.parametrize(("change", "words"), COMPLETIONS_REFUSALS)
def test_completions_refusals(sdk, change, words):
    with pytest.raises(openai.BadRequestError) as caught:
        sdk.completions.create(model="bench/core", **change)
    assert words in caught.value.message


@pytest.mark.usefixtures("breaks_mid_stream")
def test_completions_mid_stream_failure_raises_api_error(sdk):
    with pytest.raises(openai.APIError) as caught:
        for _ in sdk.completions.create(model="bench/core", prompt="hi", stream=True):
            pass
    assert kit.MID_STREAM in caught.value.message


def test_gateway_errors_tell_the_sdk_not_to_retry(gateway, http):
    r = http.post(gateway + "/v1/responses", json={"model": "bench/nowhere", "input": "hi"})
    assert r.status_code == 404 and r.headers["x-should-retry"] == "false"
