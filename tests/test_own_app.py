"""Issue 33 item 6: free models that work only in their provider's own app. A per-provider switch
(``/api/own-app-free``, Settings, ``bench own-app``) keeps that provider's free models off panels,
as members and as explorers (each skipped with why), and out of Discover's free list (its rows say
``own_app_only``); its paid models, and other providers' free ones, are untouched."""

from __future__ import annotations

import httpx
import pytest

from benchwarmers_mcp.catalog.own_app import kept_off
from benchwarmers_mcp.engine.seating import seat_panel
from benchwarmers_mcp.messages import Ask, user
from benchwarmers_mcp.store import endpoints, models, own_app
from benchwarmers_mcp.store.collections import Collection, GatewaySettings
from benchwarmers_mcp.store.endpoints import Endpoint
from benchwarmers_mcp.store.models import ModelRecord, family_of
from tests.kits.store import store_of

OPENROUTER = "https://openrouter.ai/api/v1"  # never called: seating and Discover touch no network


async def add(db, alias: str, served: str, endpoint: str = "or") -> None:
    await models.register(db, ModelRecord(alias, served, endpoint, family_of(served)))


@pytest.mark.anyio
async def test_a_switched_providers_free_models_sit_nowhere_on_a_panel(home) -> None:
    async with store_of(home) as db:
        await endpoints.add(db, Endpoint("or", OPENROUTER))
        await endpoints.add(db, Endpoint("local", "http://127.0.0.1:9/v1"))
        await add(db, "free-member", "meta-llama/llama-3.3-70b-instruct:free")
        await add(db, "paid-member", "openai/gpt-4o-mini")
        await add(db, "free-explorer", "qwen/qwen3-coder:free")
        await add(db, "elsewhere", "mistral-small:free", endpoint="local")  # not OpenRouter's
        panel = Collection("c", ("free-member", "paid-member"))
        ask, room = Ask("c", (user("hello"),)), GatewaySettings(4, 2)

        before = await seat_panel(db, panel, ask, room)
        assert {s.alias for s in before.seats} == {"free-member", "paid-member", "free-explorer", "elsewhere"}
        assert await kept_off(db) == {}

        assert await own_app.switch(db, "openrouter", True) == frozenset({"openrouter"})
        off = await kept_off(db)
        assert set(off) == {"free-member", "free-explorer"} and "own app" in off["free-member"]
        after = await seat_panel(db, panel, ask, room)
        assert {s.alias for s in after.seats} == {"paid-member", "elsewhere"}
        assert {"seat": "member", "alias": "free-member", "why": off["free-member"]} in after.skipped

        assert await own_app.switch(db, "openrouter", False) == frozenset()
        again = await seat_panel(db, panel, ask, room)
        assert {s.alias for s in again.seats} == {s.alias for s in before.seats}


def test_the_switch_over_the_admin_api_and_discovers_free_list(api: httpx.Client) -> None:
    def free_rows(**params: str) -> list[dict]:
        reply = api.get("/api/discover", params={"free": "1", "limit": "5000", **params})
        assert reply.status_code == 200, reply.text
        return reply.json()["rows"]

    assert api.get("/api/own-app-free").json() == {"providers": [], "kept_off": {}, "connected": []}
    openrouter_free = free_rows(provider="openrouter")
    assert openrouter_free and all(r["free"] and not r["own_app_only"] for r in openrouter_free)
    others = [r for r in free_rows() if r["provider"] != "openrouter"]

    switched = api.post("/api/own-app-free", json={"provider": "OpenRouter", "own_app_only": True})
    assert switched.status_code == 200 and switched.json()["providers"] == ["openrouter"]
    assert free_rows(provider="openrouter") == [], "none of its free models is on Discover's free list"
    assert [r["key"] for r in free_rows() if r["provider"] != "openrouter"] == [r["key"] for r in others]
    every = api.get("/api/discover", params={"provider": "openrouter", "limit": "5000"}).json()["rows"]
    marked = {r["key"] for r in every if r["own_app_only"]}
    assert marked == {r["key"] for r in openrouter_free} and not any(r["free"] for r in every)

    assert api.post("/api/own-app-free", json={"provider": "openrouter", "own_app_only": False}).json()["providers"] == []
    assert len(free_rows(provider="openrouter")) == len(openrouter_free)

    for body in ({"provider": "not a provider!", "own_app_only": True}, {"provider": "openrouter"},
                 {"provider": "openrouter", "own_app_only": "yes please"}):
        bad = api.post("/api/own-app-free", json=body)
        assert bad.status_code == 400 and bad.json()["error"]["message"], (body, bad.text)
