"""Limits seen from outside: a rate-limited explorer rests and the next panel seats another,
``GET /bench/quotas``, and the small admin routes that set limits and end pauses."""

from __future__ import annotations

from pathlib import Path

import anyio
import openai
import pytest

from benchwarmers_mcp.store import collections as cs
from benchwarmers_mcp.store import models
from tests.kits.loopback import Loopback
from tests.kits.seed import seed
from tests.kits.store import store_of

WINDOW_KEYS = {"metric", "window", "limit", "used", "remaining", "resets_at"}


def client(net: Loopback, base: str) -> openai.OpenAI:
    return openai.OpenAI(http_client=net.client2(), base_url=base + "/v1", api_key="anything", max_retries=0)


def ask(net: Loopback, base: str, collection: str) -> list[dict]:
    reply = client(net, base).chat.completions.create(model=f"bench/{collection}",
                                                 messages=[{"role": "user", "content": "review this"}])
    return reply.model_extra["bench"]["seats"]


async def _never_used(home: Path, alias: str) -> None:
    async with store_of(home) as db:
        await models.set_last_used(db, alias, None)


async def _one_explorer(home: Path) -> None:
    async with store_of(home) as db:
        await cs.save_gateway_settings(db, cs.GatewaySettings(max_calls=5, max_explorers=1))


@pytest.fixture
def bench(home: Path, upstream: str) -> None:
    seed(home, base_url=upstream, served={"solo": "solo", "aa-bad": "aa-bad?fail=429", "bb-good": "bb-good"},
         collections={"one": ["solo"]})
    anyio.run(_one_explorer, home)


def test_a_429_rests_the_model_and_the_next_panel_seats_another_explorer(bench, home, gateway, fake, net, http):
    first = ask(net, gateway, "one")
    assert [(s["alias"], s["status"]) for s in first] == [("solo", "ok"), ("aa-bad", "error")]
    assert "429" in first[1]["error"]
    # make the rested model the least recently used again: only its rest can keep it off the panel
    anyio.run(_never_used, home, "aa-bad")
    second = ask(net, gateway, "one")
    assert [(s["alias"], s["status"]) for s in second] == [("solo", "ok"), ("bb-good", "ok")]
    assert fake.count("aa-bad?fail=429") == 1
    quotas = http.get(gateway + "/bench/quotas").json()
    [connection] = quotas["connections"]
    [rest] = connection["resting"]
    assert rest["alias"] == "aa-bad" and rest["until"] and rest["why"].startswith("upstream 429")
    assert connection["paused"] is None


def test_quotas_show_each_window_used_and_left(bench, gateway, net):
    with net.client(base_url=gateway) as http:
        set_ = http.post("/api/limits", json={"connection": "fake", "rpm": 50, "tpd": 100000})
        assert set_.status_code == 200, set_.text
        assert {(x["name"], x["value"]) for x in set_.json()["limits"]} == {("rpm", 50), ("tpd", 100000)}
        assert http.post("/api/limits", json={"model": "solo", "rpm": 7}).status_code == 200
        ask(net, gateway, "one")
        quotas = http.get("/bench/quotas").json()
    [connection] = quotas["connections"]
    assert connection["connection"] == "fake"
    windows = {(w["metric"], w["window"], w["alias"]): w for w in connection["windows"]}
    assert all(WINDOW_KEYS <= set(w) for w in windows.values())
    rpm = windows[("requests", "minute", None)]
    assert (rpm["limit"], rpm["used"], rpm["remaining"]) == (50, 2, 48) and rpm["resets_at"]
    solo = windows[("requests", "minute", "solo")]
    assert (solo["limit"], solo["used"], solo["remaining"]) == (7, 1, 6)
    tpd = windows[("tokens", "day", None)]
    assert tpd["used"] > 0 and tpd["used"] + tpd["remaining"] == 100000
    assert connection["month"]["calls"] == 2 and connection["month"]["attempts"] == 2


@pytest.mark.parametrize(("body", "status", "words"), [
    ({}, 400, "exactly one of connection or model"),
    ({"connection": "fake", "model": "solo", "rpm": 1}, 400, "exactly one"),
    ({"connection": "nope", "rpm": 1}, 404, "no connection named 'nope'"),
    ({"model": "nope", "rpm": 1}, 404, "no model with alias 'nope'"),
    ({"connection": "fake", "rpm": 0}, 400, "rpm"),
    ({"connection": "fake", "rpm": "5"}, 400, "rpm"),
    ({"connection": "fake", "rpm": True}, 400, "rpm"),
    ({"connection": "fake", "rph": 5}, 400, "rph"),
    ({"connection": "fake"}, 400, "name at least one limit"),
    ({"model": "solo", "rpmo": 10}, 400, "rpmo"),
])
def test_bad_limits_are_refused_clearly(bench, gateway, body, status, words, http):
    response = http.post(gateway + "/api/limits", json=body)
    assert response.status_code == status
    assert words in response.json()["error"]["message"]


def test_null_removes_a_limit_and_resume_ends_a_rest(bench, gateway, home, net):
    with net.client(base_url=gateway) as http:
        http.post("/api/limits", json={"connection": "fake", "rpm": 1, "rpd": 10})
        http.post("/api/limits", json={"connection": "fake", "rpm": None})
        assert [(x["name"], x["value"]) for x in http.get("/api/limits").json()["limits"]] == [("rpd", 10)]
        first = ask(net, gateway, "one")
        assert first[1]["status"] == "error"
        before = http.get("/bench/quotas").json()["connections"][0]["resting"]
        assert [r["alias"] for r in before] == ["aa-bad"]
        resumed = http.post("/api/limits/resume", json={"model": "aa-bad"})
        assert resumed.json() == {"ok": True, "scope": "model", "subject": "aa-bad", "resumed": True}
        assert http.get("/bench/quotas").json()["connections"][0]["resting"] == []
        assert http.post("/api/limits/resume", json={"connection": "fake"}).json()["resumed"] is False
