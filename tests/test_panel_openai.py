"""Issue 2: the panel gateway end to end on OpenAI chat completions, judged by the openai SDK."""

from __future__ import annotations

import time

import anyio
import httpx
import pytest

from tests.kits.gateway import async_openai_sdk, openai_sdk, serve_gateway
from tests.kits.loopback import Loopback
from tests.kits.seed import seed
from tests.kits.store import store_of


@pytest.fixture
def panel(home, upstream, settings):
    """A collection of three members on the fake upstream: one fast, one medium, one slow."""
    seed(home, base_url=upstream, served={"fast": "fast", "medium": "medium?latency=0.3",
                                          "slow": "slow?latency=0.6"},
         collections={"core": ["fast", "medium", "slow"]})
    return home


@pytest.fixture
def client(net: Loopback):
    """The sync openai SDK on a gateway of the test's loopback: ``client(gateway)``."""
    return lambda base: openai_sdk(net, base)


def test_sync_panel_whole_reads_every_seat(panel, gateway, fake, client):
    reply = client(gateway).chat.completions.create(
        model="bench/core", messages=[{"role": "user", "content": "Where is the stale read?"}])
    bench = reply.model_extra["bench"]
    assert bench["collection"] == "bench/core"
    assert [s["alias"] for s in bench["seats"]] == ["fast", "medium", "slow"]
    assert all(s["status"] == "ok" for s in bench["seats"])
    assert all(s["call"] == f"{bench['panel']}.member{i}" for i, s in enumerate(bench["seats"], 1))
    content = reply.choices[0].message.content
    for seat in bench["seats"]:
        assert f"`{seat['call']}`" in content and seat["answer"] in content
    assert reply.model == "bench/core"
    assert reply.usage.prompt_tokens > 0 and reply.usage.completion_tokens > 0
    assert fake.count() == 3


@pytest.mark.anyio
async def test_async_stream_seats_arrive_in_finish_order(panel, gateway, net):
    aclient = async_openai_sdk(net, gateway)
    started = time.monotonic()
    first_byte = None
    pieces: list[str] = []
    bench = None
    stream = await aclient.chat.completions.create(
        model="core", stream=True, messages=[{"role": "user", "content": "Review this"}])
    async for chunk in stream:
        if first_byte is None:
            first_byte = time.monotonic() - started
        if chunk.choices and chunk.choices[0].delta.content:
            pieces.append(chunk.choices[0].delta.content)
        if chunk.model_extra.get("bench"):
            bench = chunk.model_extra["bench"]
    total = time.monotonic() - started
    text = "".join(pieces)
    order = [text.index(f"— {alias}") for alias in ("fast", "medium", "slow")]
    assert order == sorted(order), "seats must stream in the order they finished"
    assert first_byte is not None and first_byte < total / 2, "the 200 and first chunk go before the slowest seat"
    assert bench and {s["alias"] for s in bench["seats"]} == {"fast", "medium", "slow"}
    await aclient.close()


def test_stream_helper_accepts_the_chunks(panel, gateway, client):
    with client(gateway).chat.completions.stream(
            model="bench/core", messages=[{"role": "user", "content": "hello"}]) as stream:
        final = stream.get_final_completion()
    assert "## member — slow" in final.choices[0].message.content


def test_failing_seats_are_reported_while_others_answer(home, upstream, settings, net, client):
    seed(home, base_url=upstream, served={"good": "good", "limited": "limited?fail=429", "broken": "broken?fail=500",
                                          "stuck": "stuck?fail=hang", "quiet": "quiet?fail=empty"},
         collections={"mixed": ["good", "limited", "broken", "stuck", "quiet"]})
    base = serve_gateway(net, settings, seat_timeout=10.0)  # stuck's, and far beyond what the others take
    reply = client(base).chat.completions.create(
        model="bench/mixed", messages=[{"role": "user", "content": "go"}])
    status = {s["alias"]: s for s in reply.model_extra["bench"]["seats"]}
    assert status["good"]["status"] == "ok"
    assert status["limited"]["status"] == "error" and "429" in status["limited"]["error"]
    assert status["broken"]["status"] == "error" and "500" in status["broken"]["error"]
    assert status["stuck"]["status"] == "timeout"
    assert status["quiet"]["status"] == "empty"
    content = reply.choices[0].message.content
    assert "_error: upstream 429" in content and "token budget" in content


def test_explorers_rotate_across_panels(home, upstream, gateway, client):
    served = ["member-a", "ex-one", "ex-two", "ex-three", "ex-four"]
    seed(home, base_url=upstream, served=served, collections={"solo": ["member-a"]})
    seen = []
    for _ in range(2):
        reply = client(gateway).chat.completions.create(
            model="bench/solo", messages=[{"role": "user", "content": "hi"}])
        seats = reply.model_extra["bench"]["seats"]
        assert [s["seat"] for s in seats] == ["member", "explorer", "explorer 2"]
        seen.append({s["alias"] for s in seats[1:]})
    assert seen[0].isdisjoint(seen[1]), "the least recently used models sit next"
    assert seen[0] | seen[1] == {"ex-one", "ex-two", "ex-three", "ex-four"}


def test_with_nominates_an_explorer(panel, gateway, home, upstream, client):
    seed(home, base_url=upstream, served=["extra", "other"], collections={})
    reply = client(gateway).chat.completions.create(
        model="bench/core", messages=[{"role": "user", "content": "hi"}], extra_body={"with": ["other", "fast"]})
    seats = reply.model_extra["bench"]["seats"]
    assert seats[3]["alias"] == "other" and seats[3]["seat"] == "explorer"
    assert seats[3]["note"] == "nominated" and "note" not in seats[0]
    assert [s["alias"] for s in seats].count("fast") == 1


def test_verdict_round_trip(panel, gateway, net, client):
    reply = client(gateway).chat.completions.create(
        model="bench/core", messages=[{"role": "user", "content": "check"}])
    call = reply.model_extra["bench"]["seats"][0]["call"]
    other = reply.model_extra["bench"]["seats"][1]["call"]
    with net.client(base_url=gateway) as http:
        pending = http.post("/bench/pending", json={"calls": [call, other, "p20990101-000000-abcd.member1"]})
        assert pending.json() == {"pending": [call, other]}
        verdict = {"call": call, "useful": True, "note": "found it", "real": ["the stale read"], "false": ["a race"]}
        first = http.post("/bench/verdict", json=verdict)
        assert first.status_code == 200 and first.json()["written"] is True
        again = http.post("/bench/verdict", json=verdict)
        assert again.json()["written"] is False
        assert http.post("/bench/pending", json={"calls": [call, other]}).json() == {"pending": [other]}
        record = http.get("/bench/record", params={"collection": "core"}).json()
        assert record["aliases"]["fast"]["useful"] == 1 and record["aliases"]["fast"]["judged"] == 1
        unknown = http.post("/bench/verdict", json={"call": "p20990101-000000-abcd.member1", "useful": True})
        assert unknown.status_code == 404
        bad = http.post("/bench/verdict", json={"call": call, "useful": "yes"})
        assert bad.status_code == 400 and "useful" in bad.json()["error"]["message"]
        assert http.get("/bench/record").status_code == 400
        assert http.post("/bench/pending", json={"calls": "x"}).status_code == 400


def test_merged_mode_has_a_merger_call(panel, gateway, client):
    reply = client(gateway).chat.completions.create(
        model="bench/core:merged", messages=[{"role": "user", "content": "merge this"}])
    bench = reply.model_extra["bench"]
    assert bench["reply"] == "merged"
    assert bench["merger"]["call"] == f"{bench['panel']}.merger"
    assert "Merged by" in reply.choices[0].message.content


def test_merged_mode_falls_back_with_every_answer(home, upstream, gateway, client):
    seed(home, base_url=upstream, served={"ok1": "ok1", "bad-merger": "bad-merger?fail=500"},
         collections={"mm": ["ok1"]})
    anyio.run(_set_merger, home, "mm", "bad-merger", 0)
    reply = client(gateway).chat.completions.create(
        model="bench/mm:merged", messages=[{"role": "user", "content": "merge"}])
    bench = reply.model_extra["bench"]
    assert bench["reply"] == "all" and "bad-merger" in bench["note"]
    assert reply.choices[0].message.content.startswith("_Merged reply unavailable")
    assert "answer from ok1" in reply.choices[0].message.content


async def _set_merger(home, name, merger, max_explorers=2):
    from benchwarmers_mcp.store import collections as cs

    async with store_of(home) as db:
        await cs.save_gateway_settings(db, cs.GatewaySettings(max_calls=5, max_explorers=max_explorers))
        c = await cs.get(db, name)
        await cs.save(db, cs.Collection(c.name, c.members, c.description, c.tags, c.shape, c.reply, merger))


def test_models_lists_collections_with_modes(panel, gateway, client):
    ids = [m.id for m in client(gateway).models.list()]
    assert {"bench/core", "bench/core:merged", "bench/core:route"} <= set(ids)


def test_keepalives_and_overhead_header(home, upstream, settings, net, http: httpx.Client):
    seed(home, base_url=upstream, served={"lazy": "lazy?latency=0.4"}, collections={"slowpoke": ["lazy"]})
    base = serve_gateway(net, settings, keepalive=0.1)
    body = {"model": "bench/slowpoke", "messages": [{"role": "user", "content": "x"}], "stream": True}
    with http.stream("POST", base + "/v1/chat/completions", json=body) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        raw = "".join(r.iter_text())
    whole = http.post(base + "/v1/chat/completions", json={**body, "stream": False})
    assert ": keep-alive" in raw and raw.rstrip().endswith("data: [DONE]")
    assert float(whole.headers["x-bench-overhead-ms"]) >= 0
    assert whole.headers["x-bench-panel"] == whole.json()["bench"]["panel"]


def test_a_member_that_failed_in_the_panel_does_not_merge_it(home, upstream, gateway, fake, client):
    seed(home, base_url=upstream, served={"broken": "broken?fail=429", "fine": "fine"},
         collections={"pair": ["broken", "fine"]})
    anyio.run(_set_merger, home, "pair", "broken")
    reply = client(gateway).chat.completions.create(
        model="bench/pair:merged", messages=[{"role": "user", "content": "merge"}])
    bench = reply.model_extra["bench"]
    assert bench["reply"] == "merged" and bench["merger"]["alias"] == "fine"
    assert fake.count("broken?fail=429") == 1, "the failed member was not asked again to merge"


def test_sampling_options_reach_seats_within_each_models_limit(home, upstream, gateway, fake, client):
    seed(home, base_url=upstream, served=["roomy", "capped"], collections={"opts": ["roomy", "capped"]})
    anyio.run(_cap_output, home, "capped", 64)
    client(gateway).chat.completions.create(
        model="bench/opts", temperature=0.2, max_tokens=500, messages=[{"role": "user", "content": "x"}],
        response_format={"type": "json_object"})
    sent = {c.model: c.body for c in fake.calls}
    assert sent["roomy"]["temperature"] == 0.2 and sent["roomy"]["max_tokens"] == 500
    assert sent["capped"]["max_tokens"] == 64, "max_tokens is cut to the model's known output limit"
    assert "response_format" not in sent["roomy"], "a panel answers in markdown"


async def _cap_output(home, alias, limit):
    from benchwarmers_mcp.store import models

    async with store_of(home) as db:
        await models.update(db, alias, max_output=limit)
