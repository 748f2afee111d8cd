"""Issue 5: a panel answers the ollama client: chat and generate, streamed (the default) and not,
list, show, ps and version; NDJSON without blank lines; refusals as ResponseError."""

from __future__ import annotations

import json

import httpx
import ollama
import pytest

from benchwarmers_mcp.engine import report
from tests.kits import dialect as kit
from tests.kits.dialect import breaks_mid_stream, panel, settings  # noqa: F401  (fixtures)

pytestmark = pytest.mark.usefixtures("panel")

CHAT = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": kit.QUESTION}]


@pytest.fixture
def client(gateway, net):
    with ollama.Client(transport=net.transport(sync=True), host=gateway) as client:
        yield client


def test_chat_whole_reads_every_seat(client):
    reply = client.chat(model="bench/core", messages=CHAT, stream=False, options={"temperature": 0.2})
    kit.assert_every_seat(reply.message.content)
    assert reply.done and reply.done_reason == "stop" and reply.model == "bench/core"
    assert reply.prompt_eval_count > 0 and reply.eval_count > 0 and reply.total_duration > 0


def test_chat_streamed_by_default_ends_with_bench(client, gateway, http):
    parts = list(client.chat(model="bench/core:latest", messages=CHAT, stream=True))
    kit.assert_every_seat("".join(p.message.content for p in parts))
    assert parts[-1].done and all(not p.done for p in parts[:-1])
    raw = http.post(gateway + "/api/chat", json={"model": "bench/core", "messages": CHAT}, timeout=30)
    lines = raw.text.split("\n")
    assert lines[-1] == "" and "" not in lines[:-1], "NDJSON without blank lines"
    done = json.loads(lines[-2])
    assert done["done"] and [s["alias"] for s in done["bench"]["seats"]] == list(kit.MEMBERS)
    assert any(json.loads(line)["message"]["content"] == "" for line in lines[:-2]), "keep-alive lines"


def test_generate_whole_and_streamed(client):
    whole = client.generate(model="bench/core", prompt=kit.QUESTION, system="Be brief.")
    kit.assert_every_seat(whole.response)
    streamed = list(client.generate(model="bench/core", prompt=kit.QUESTION, stream=True))
    kit.assert_every_seat("".join(p.response for p in streamed))
    assert streamed[-1].done and streamed[-1].done_reason == "stop"


def test_images_are_sniffed_and_reach_seats_that_can_see(client):
    reply = client.chat(model="bench/eyes", stream=False,
                        messages=[{"role": "user", "content": "What are these?",
                                   "images": [kit.PNG, kit.JPEG]}])
    kit.assert_every_seat(reply.message.content, ("owl", "hawk"))


def test_list_show_ps_version(client, gateway, http):
    models = [m.model for m in client.list().models]
    assert models == ["bench/core", "bench/core:merged", "bench/core:route",
                      "bench/eyes", "bench/eyes:merged", "bench/eyes:route"]
    shown = client.show("bench/eyes:latest")
    assert "vision" in shown.capabilities and shown.modelinfo["benchwarmers.members"] == "owl, hawk"
    assert client.ps().models == []
    assert http.get(gateway + "/api/version", timeout=10).json() == {"version": "0.12.0"}


def test_an_empty_prompt_only_loads(client):
    loaded = client.generate(model="bench/core")
    assert loaded.done and loaded.done_reason == "load" and loaded.response == ""


REFUSALS = [
    ("chat", dict(messages=CHAT, tools=[{"type": "function", "function": {"name": "grep"}}]), 400, "route mode"),
    ("chat", dict(messages=[*CHAT, {"role": "assistant", "content": "",
                                    "tool_calls": [{"function": {"name": "grep", "arguments": {"q": "x"}}}]},
                            {"role": "tool", "content": "found", "tool_name": "grep"}]), 400, "route mode"),
    ("generate", dict(prompt="go on", context=[1, 2, 3]), 400, "context"),
    ("generate", dict(prompt="what is it", images=[kit.PDF]), 400, "not a PNG"),
    ("chat", dict(model="bench/nowhere", messages=CHAT), 404, "nowhere"),
]


@pytest.mark.parametrize(("method", "change", "status", "words"), REFUSALS)
def test_refusals_raise_response_error_with_the_gateway_message(client, method, change, status, words):
    with pytest.raises(ollama.ResponseError) as caught:
        getattr(client, method)(**{"model": "bench/core", "stream": False, **change})
    assert caught.value.status_code == status and words in caught.value.error


def test_show_unknown_model_is_not_found(client):
    with pytest.raises(ollama.ResponseError) as caught:
        client.show("bench/nowhere")
    assert caught.value.status_code == 404 and "not found" in caught.value.error


@pytest.mark.usefixtures("breaks_mid_stream")
def test_mid_stream_failure_is_an_error_line(client):
    with pytest.raises(ollama.ResponseError) as caught:
        for _ in client.chat(model="bench/core", messages=CHAT, stream=True):
            pass
    assert caught.value.status_code == -1 and kit.MID_STREAM in caught.value.error


def test_an_unexpected_failure_mid_stream_is_reported_not_dropped(client, monkeypatch):
    def footer(run):
        raise RuntimeError("a bug in the footer")

    monkeypatch.setattr(report, "footer", footer)
    with pytest.raises(ollama.ResponseError) as caught:
        for _ in client.generate(model="bench/core", prompt=kit.QUESTION, stream=True):
            pass
    assert "internal error" in caught.value.error and "a bug" not in caught.value.error


def test_unknown_ollama_route_and_bad_json_are_ollama_shaped(gateway, http):
    r = http.post(gateway + "/api/chat", content=b"{not json", headers={"content-type": "application/json"},
                   timeout=10)
    assert r.status_code == 400 and isinstance(r.json()["error"], str)
    r = http.get(gateway + "/api/chat", timeout=10)
    assert r.status_code == 405 and isinstance(r.json()["error"], str)


def _untyped(request: httpx.Request) -> None:
    """What LiteLLM's ollama/ and ollama_chat/ providers send: a JSON body with no Content-Type."""
    del request.headers["Content-Type"]


@pytest.fixture
def untyped_client(gateway, net):
    with ollama.Client(transport=net.transport(sync=True), host=gateway, event_hooks={"request": [_untyped]}) as c:
        yield c


def test_json_without_a_content_type_is_read_as_real_ollama_reads_it(untyped_client):
    """Issue 29: the ollama SDK with its Content-Type taken off, chat, generate and show, streamed and not."""
    kit.assert_every_seat(untyped_client.chat(model="bench/core", messages=CHAT, stream=False).message.content)
    kit.assert_every_seat("".join(p.message.content for p in untyped_client.chat(model="bench/core", messages=CHAT,
                                                                                 stream=True)))
    kit.assert_every_seat(untyped_client.generate(model="bench/core", prompt=kit.QUESTION).response)
    assert untyped_client.show("bench/eyes").modelinfo["benchwarmers.members"] == "owl, hawk"
    with pytest.raises(ollama.ResponseError) as caught:  # a refusal is still the route's, in its shape
        untyped_client.chat(model="bench/nowhere", messages=CHAT, stream=False)
    assert caught.value.status_code == 404 and "nowhere" in caught.value.error


def test_raw_posts_without_a_content_type(gateway, http):
    body = json.dumps({"model": "bench/core", "messages": CHAT, "stream": False}).encode()
    r = http.post(gateway + "/api/chat", content=body, timeout=30)
    assert "content-type" not in r.request.headers
    assert r.status_code == 200, r.text
    kit.assert_every_seat(r.json()["message"]["content"])
    r = http.post(gateway + "/api/generate", content=json.dumps({"model": "bench/core", "prompt": kit.QUESTION,
                                                                 "stream": False}).encode(), timeout=30)
    assert r.status_code == 200 and r.json()["done"], r.text
    r = http.post(gateway + "/api/chat", content=b"{not json", timeout=10)
    assert r.status_code == 400 and isinstance(r.json()["error"], str)  # still checked as JSON


def test_untyped_json_holds_only_on_ollama_routes_and_never_cross_site(gateway, http):
    body = json.dumps({"model": "bench/core", "messages": CHAT, "stream": False}).encode()
    for headers in ({"Sec-Fetch-Site": "cross-site"}, {"Origin": "https://evil.example"},
                    {"Origin": "null", "Sec-Fetch-Site": "cross-site"}):  # a page's fetch of a typeless Blob
        r = http.post(gateway + "/api/chat", content=body, headers=headers, timeout=10)
        assert r.status_code == 403 and isinstance(r.json()["error"], str), (headers, r.text)
    for headers in ({"Content-Type": "text/plain"}, {"Content-Type": "application/x-www-form-urlencoded"},
                    {"Content-Type": ""}):
        r = http.post(gateway + "/api/chat", content=body, headers=headers, timeout=10)
        assert r.status_code == 415 and isinstance(r.json()["error"], str), (headers, r.text)
    for path in ("/v1/chat/completions", "/api/gateway-key", "/bench/verdict"):
        r = http.post(gateway + path, content=body, timeout=10)
        assert r.status_code == 415, (path, r.text)
