"""The admin routes the dashboard added, against the app in-process (its lifespan run): asking with each
seat streamed as it finishes, verdicts with a login, trying an endpoint before it is saved, the
default endpoint, logs without prompts, chart figures and the event stream."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest

from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import verdicts as verdict_store
from benchwarmers_mcp.store.verdicts import VerdictLine
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.store import store_of

SECRET = "sk-dashboard-test-0123456789"
PROMPT = "a question nobody may read back from the logs"


def error_of(response: httpx.Response) -> str:
    return response.json()["error"]["message"]


def bench(api: httpx.Client, upstream: str, served: list[str], members: list[str] | None = None) -> list[str]:
    assert api.post("/api/endpoint", json={"name": "fake", "base": upstream, "key": SECRET}).status_code == 201
    aliases = []
    for s in served:
        reply = api.post("/api/model/register", json={"served": s, "endpoint": "fake"})
        assert reply.status_code == 201, reply.text
        aliases.append(reply.json()["model"]["alias"])
    chosen = members or aliases
    assert api.post("/api/collection", json={"name": "core", "members": chosen}).status_code == 201
    return aliases


def sse(lines: Iterator[str]) -> Iterator[tuple[str, dict]]:
    event, data = "message", []
    for line in lines:
        if line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
        elif not line and data:
            yield event, json.loads("\n".join(data))
            event, data = "message", []


def seat_in_store(home: Path, call: str) -> bool:
    async def read() -> bool:
        async with store_of(home) as db:
            return await verdict_store.call_target(db, call) is not None

    return anyio.run(read)


def verdict_log(home: Path) -> list[VerdictLine]:
    async def read() -> list[VerdictLine]:
        async with store_of(home) as db:
            return await verdict_store.log(db)

    return anyio.run(read)


def test_asking_streams_each_seat_as_it_finishes_and_it_is_stored_first(
        api: httpx.Client, upstream: str, fake: FakeUpstream, home: Path) -> None:
    fast, slow = bench(api, upstream, ["fast", "slow?latency=1.5"])
    events = []
    with api.stream("POST", "/api/ask", json={"collection": "bench/core", "prompt": "hello",
                                               "files": [{"name": "notes.txt", "text": "the file's words"}]}) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        for event, data in sse(r.iter_lines()):
            if event == "seat":
                assert seat_in_store(home, data["call"])  # on the record before anyone is told
            events.append((event, data))
    kinds = [e for e, _ in events]
    assert kinds == ["panel", "seat", "seat", "done"]
    opening = events[0][1]
    assert [s["alias"] for s in opening["seats"]] == [fast, slow] and opening["collection"] == "bench/core"
    assert [d["alias"] for e, d in events if e == "seat"] == [fast, slow]  # finish order
    seat = events[1][1]
    assert seat["status"] == "ok" and seat["seat"] == "member" and seat["call"].startswith(opening["panel"])
    sent = fake.calls[0].body["messages"][-1]["content"]
    assert "hello" in sent and "--- notes.txt ---" in sent and "the file's words" in sent


@pytest.mark.parametrize(("body", "status", "words"), [
    ({"collection": "nope", "prompt": "hi"}, 404, "unknown collection"),
    ({"collection": "core"}, 400, "prompt"),
    ({"collection": "core", "prompt": "hi", "reply": "route"}, 400, "reply"),
    ({"collection": "core", "prompt": "hi", "files": [{"name": "x"}]}, 400, "exactly one of text or image"),
    ({"collection": "core", "prompt": "hi", "files": [{"name": "x", "image": "http://example.com/a.png"}]}, 400,
     "image"),
])
def test_a_bad_ask_is_refused_before_the_stream(api: httpx.Client, upstream: str, body: dict, status: int,
                                                words: str) -> None:
    bench(api, upstream, ["alpha"])
    reply = api.post("/api/ask", json=body)
    assert reply.status_code == status and words in error_of(reply)


def test_a_dashboard_verdict_is_recorded_as_the_dashboards(api: httpx.Client, upstream: str, home: Path) -> None:
    bench(api, upstream, ["alpha"])
    with api.stream("POST", "/api/ask", json={"collection": "core", "prompt": "hi"}) as r:
        call = next(d["call"] for e, d in sse(r.iter_lines()) if e == "seat")
    verdict = {"call": call, "useful": False, "note": "wrong file", "false": ["the SQL injection"]}
    reply = api.post("/api/verdict", json=verdict)
    assert reply.status_code == 200 and reply.json()["written"] is True
    again = api.post("/api/verdict", json=verdict)
    assert again.json()["written"] is False  # the same verdict twice writes nothing
    rows = [(line.verdict.useful, line.verdict.note, line.verdict.false, line.key_name) for line in verdict_log(home)]
    assert rows == [(False, "wrong file", ("the SQL injection",), "dashboard")]
    assert api.post("/api/verdict", json={"call": "p-none.member1", "useful": True}).status_code == 404


def test_trying_an_endpoint_saves_nothing(api: httpx.Client, upstream: str, fake: FakeUpstream,
                                          settings: Settings) -> None:
    fake.served[:] = ["vendor/alpha", "beta"]
    tried = api.post("/api/endpoint/try", json={"name": "fake", "base": upstream, "key": SECRET})
    assert tried.status_code == 200
    body = tried.json()
    assert body["ok"] is True and body["served"] == 2 and body["sample"] == ["vendor/alpha", "beta"]
    assert body["key"] == "given" and body["saved"] is False and SECRET not in tried.text
    assert api.get("/api/endpoints").json()["endpoints"] == []
    assert not (settings.config_dir / "keys.json").exists()
    dead = api.post("/api/endpoint/try", json={"name": "dead", "base": "http://127.0.0.1:9/v1"}).json()
    assert dead["ok"] is False and dead["error"]
    bad = api.post("/api/endpoint/try", json={"name": "Bad Name", "base": upstream})
    assert bad.status_code == 400


def test_the_default_endpoint_is_chosen_and_logged(api: httpx.Client, upstream: str) -> None:
    assert api.get("/api/endpoint/default").json() == {"name": None}
    assert api.post("/api/endpoint/default", json={"name": "fake"}).status_code == 404
    api.post("/api/endpoint", json={"name": "fake", "base": upstream})
    assert api.post("/api/endpoint/default", json={"name": "fake"}).status_code == 200
    assert api.get("/api/endpoint/default").json() == {"name": "fake"}
    changes = api.get("/api/logs?kind=changes").json()["changes"]
    assert changes[0]["what"] == "endpoint.default" and changes[0]["subject"] == "fake"
    api.post("/api/endpoint/remove", json={"name": "fake"})
    assert api.get("/api/endpoint/default").json() == {"name": None}  # gone with its endpoint


def test_logs_list_panels_and_verdicts_never_the_prompt(api: httpx.Client, upstream: str) -> None:
    bench(api, upstream, ["alpha", "beta"])
    with api.stream("POST", "/api/ask", json={"collection": "core", "prompt": PROMPT}) as r:
        calls = [d["call"] for e, d in sse(r.iter_lines()) if e == "seat"]
    api.post("/api/verdict", json={"call": calls[0], "useful": True})
    reply = api.get("/api/logs")
    assert PROMPT not in reply.text and "answer from" not in reply.text
    logs = reply.json()
    [panel] = logs["panels"]
    assert panel["collection"] == "bench/core" and panel["asked_by"] == "dashboard" and panel["owed"] == 1
    assert sorted((s["call"], s["judged"], s["useful"]) for s in panel["seats"]) == sorted(
        [(calls[0], True, True), (calls[1], False, None)])
    assert logs["conversations"] == []
    assert {c["what"] for c in logs["changes"]} >= {"endpoint.save", "model.register", "collection.save"}
    assert api.get("/api/logs?kind=panels&limit=1").json().keys() == {"panels"}
    assert api.get("/api/logs?limit=0").status_code == 400
    assert api.get("/api/logs?kind=prompts").status_code == 400


def test_stats_count_requests_tokens_and_helped_share(api: httpx.Client, upstream: str) -> None:
    alpha, beta = bench(api, upstream, ["alpha", "beta"])
    for n in range(2):
        with api.stream("POST", "/api/ask", json={"collection": "core", "prompt": f"q{n}"}) as r:
            seats = {d["alias"]: d["call"] for e, d in sse(r.iter_lines()) if e == "seat"}
        api.post("/api/verdict", json={"call": seats[alpha], "useful": True})
        api.post("/api/verdict", json={"call": seats[beta], "useful": n == 0})
    usage = api.get("/api/stats/usage?days=3").json()
    assert usage["connections"] == ["fake"] and len(usage["days"]) == 3
    today = usage["days"][-1]["connections"]["fake"]
    assert today["requests"] == 4 and today["tokens"] > 0
    assert all(d["connections"]["fake"]["requests"] == 0 for d in usage["days"][:-1])
    helped = {m["alias"]: m for m in api.get("/api/stats/helped").json()["models"]}
    assert (helped[alpha]["useful"], helped[alpha]["judged"], helped[alpha]["share"]) == (2, 2, 1.0)
    assert (helped[beta]["useful"], helped[beta]["judged"], helped[beta]["share"]) == (1, 2, 0.5)
    assert api.get("/api/stats/usage?days=91").status_code == 400


def test_the_event_stream_replays_from_an_id_and_names_each_kind(api: httpx.Client, upstream: str) -> None:
    bench(api, upstream, ["alpha"])
    with api.stream("POST", "/api/ask", json={"collection": "core", "prompt": "hi"}) as r:
        call = next(d["call"] for e, d in sse(r.iter_lines()) if e == "seat")
    api.post("/api/verdict", json={"call": call, "useful": True})
    seen: list[tuple[str, dict]] = []
    with api.stream("GET", "/api/events", headers={"Last-Event-ID": "0"}) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        for event, data in sse(r.iter_lines()):
            seen.append((event, data))
            if event == "verdict":
                break
    kinds = [e for e, _ in seen]
    assert kinds[0] == "ready"
    assert kinds.count("change") == 3 and "panel" in kinds and "seat" in kinds and kinds[-1] == "verdict"
    assert seen[-1][1]["subject"] == call
    ids = [d["id"] for e, d in seen[1:]]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    after = ids[-2]
    with api.stream("GET", f"/api/events?after={after}") as r:
        replay = []
        for event, _ in sse(r.iter_lines()):
            replay.append(event)
            if event == "verdict":
                break
    assert replay == ["ready", "verdict"]
    assert api.get("/api/events", headers={"Last-Event-ID": "seven"}).status_code == 400
