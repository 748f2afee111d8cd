"""Issue 33 item 4: hubs, against fakes built from their documented APIs (Open WebUI, CLI Proxy API,
and LiteLLM's proxy with its database; the real proxy has its own test in ``tests/e2e``).

Each hub's models are listed with the upstream connection each comes through; a sync puts every
registered model on the endpoint of its upstream, so limits and pauses are that upstream's; a
model is added through the hub's admin API with its admin key; and a hub renaming a model's
prefix is followed to the same alias, before the retire job looks, so nothing is retired for it.
No reply holds a key, the hub's or an upstream's."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from benchwarmers_mcp.health import retire
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import alerts as alert_store
from benchwarmers_mcp.store import limits as limit_store
from benchwarmers_mcp.store import models as model_store
from benchwarmers_mcp.store.hubs import HubModel
from benchwarmers_mcp.upstream.hubs.base import Upstream
from benchwarmers_mcp.upstream.hubs.sync import renames, route_name
from tests.fakes.hubs import Connection, FakeCLIProxy, FakeLiteLLM, FakeOpenWebUI
from tests.kits.gateway import serve_gateway
from tests.kits.loopback import Loopback

UPSTREAM_KEY = "sk-upstream-secret-0123456789"


@pytest.fixture
def gw(net: Loopback, settings: Settings) -> str:
    return serve_gateway(net, settings)


@pytest.fixture
def api(gw: str, net: Loopback) -> Iterator[httpx.Client]:
    with net.client(base_url=gw, timeout=60) as client:
        yield client


def ok(response: httpx.Response, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    assert UPSTREAM_KEY not in response.text and "admin-key" not in response.text
    assert "mgmt" not in response.text and "sk-master" not in response.text
    return response.json()


def owui(net: Loopback) -> tuple[FakeOpenWebUI, str]:
    fake = FakeOpenWebUI(connections=[
        Connection("https://api.groq.com/openai/v1", UPSTREAM_KEY, ["llama-3.1-8b", "gemma2-9b"], "groq", ["groq"]),
        Connection("https://openrouter.ai/api/v1", UPSTREAM_KEY, ["qwen/qwen3:free"])], ollama=["phi3:mini"])
    return fake, net.serve(fake.app())


def add_owui(api: httpx.Client, base: str, fake: FakeOpenWebUI) -> None:
    ok(api.post("/api/endpoint", json={"name": "owui", "base": base + "/api", "key": fake.api_key, "hub": "openwebui",
                                       "admin_key": fake.admin_key}), 201)


def test_open_webui_models_come_with_their_connections_and_keep_limits_per_upstream(
        api: httpx.Client, net: Loopback, gw: str) -> None:
    fake, base = owui(net)
    add_owui(api, base, fake)
    shown = next(e for e in ok(api.get("/api/endpoints"))["endpoints"] if e["name"] == "owui")
    assert shown["kind"] == "hub" and shown["hub"] == "openwebui" and shown["admin_key_source"] == "keys file"
    listed = ok(api.get("/api/hub/upstreams", params={"endpoint": "owui"}))["upstreams"]
    assert {(u["served"], u["connection"], u["upstream_model"]) for u in listed} == {
        ("groq.llama-3.1-8b", "groq", "llama-3.1-8b"), ("groq.gemma2-9b", "groq", "gemma2-9b"),
        ("qwen/qwen3:free", "openrouter.ai", "qwen/qwen3:free"), ("phi3:mini", "ollama", "phi3:mini")}
    for served in ("groq.llama-3.1-8b", "qwen/qwen3:free"):  # registered on the hub, as any candidate is
        ok(api.post("/api/model/register", json={"served": served, "endpoint": "owui"}), 201)
    report = ok(api.post("/api/hub/sync", json={"endpoint": "owui"}))
    assert report["routes"] == {"groq": "owui-groq", "openrouter.ai": "owui-openrouter-ai", "ollama": "owui-ollama"}
    assert report["placed"] == {"groq.llama-3.1-8b": "owui-groq", "qwen3-free": "owui-openrouter-ai"}
    endpoints = {e["name"]: e for e in ok(api.get("/api/endpoints"))["endpoints"]}
    assert endpoints["owui-groq"]["hub_endpoint"] == "owui" and endpoints["owui-groq"]["upstream"] == "groq"
    assert endpoints["owui-groq"]["base_url"] == base + "/api" and endpoints["owui-groq"]["key_name"] == "owui"

    ctx = net.app_at(gw).state.ctx
    owners = net.call(limit_store.model_connections, ctx.db)
    assert owners["groq.llama-3.1-8b"] == "owui-groq" and owners["qwen3-free"] == "owui-openrouter-ai"
    set_limit = ok(api.post("/api/limits", json={"connection": "owui-groq", "rpm": 5}))  # one upstream's, not the hub's
    assert set_limit["scope"] == "connection" and set_limit["subject"] == "owui-groq"
    assert ok(api.post("/api/hub/sync", json={"endpoint": "owui"}))["placed"] == {}  # in step: nothing moves


def test_a_prefix_the_hub_renames_keeps_its_alias_and_is_not_retired(api: httpx.Client, net: Loopback,
                                                                     gw: str) -> None:
    fake, base = owui(net)
    add_owui(api, base, fake)
    ok(api.post("/api/model/register", json={"served": "groq.llama-3.1-8b", "endpoint": "owui"}), 201)
    ok(api.post("/api/collection", json={"name": "core", "members": ["groq.llama-3.1-8b"]}), 201)
    ok(api.post("/api/hub/sync", json={"endpoint": "owui"}))
    fake.connections[0].prefix_id = "groq-free"  # the hub's admin renames the connection's prefix
    ctx = net.app_at(gw).state.ctx
    net.call(retire.deprecations, ctx)  # the morning job: the hub first, then the listings and the rules
    model = net.call(model_store.get, ctx.db, "groq.llama-3.1-8b")
    assert model.served == "groq-free.llama-3.1-8b" and model.endpoint == "owui-groq" and not model.retired
    alerts = net.call(alert_store.open_alerts, ctx.db)
    assert [a for a in alerts if a.kind == "registration"] == []
    assert ok(api.get("/api/collections"))["collections"][0]["members"] == ["groq.llama-3.1-8b"]


def test_renames_are_decided_from_the_listings_alone() -> None:
    before = {"groq.llama": HubModel("groq.llama", "groq", "llama"), "groq.gemma": HubModel("groq.gemma", "groq", "gemma")}
    now = [Upstream("free.llama", "groq", "llama"), Upstream("groq.gemma", "groq", "gemma")]
    assert renames({"groq.llama": "llama", "groq.gemma": "gemma"}, before, now) == {"groq.llama": "free.llama"}
    twice = [Upstream("a.llama", "groq", "llama"), Upstream("b.llama", "other", "llama")]
    assert renames({"groq.llama": "llama"}, before, twice) == {"groq.llama": "a.llama"}  # the same connection wins
    ambiguous = [Upstream("a.llama", "x", "llama"), Upstream("b.llama", "y", "llama")]
    assert renames({"groq.llama": "llama"}, before, ambiguous) == {}  # two candidates: nothing is guessed
    assert renames({"groq.llama": "llama"}, {}, now) == {}  # nothing known of it before: not followed
    assert route_name("hub", "api.groq.com") == "hub-api-groq-com"
    assert len(route_name("a-very-long-hub-name", "some.very.long.upstream.host.example")) <= 32


def test_a_model_is_added_through_open_webuis_admin_api(api: httpx.Client, net: Loopback) -> None:
    fake, base = owui(net)
    add_owui(api, base, fake)
    ok(api.post("/api/endpoint", json={"name": "cerebras", "base": "https://api.cerebras.ai/v1",
                                       "key": UPSTREAM_KEY}), 201)
    fake.upstream_models["https://api.cerebras.ai/v1"] = ["llama3.1-8b", "qwen-3-32b"]
    added = ok(api.post("/api/hub/register", json={
        "endpoint": "owui", "upstream_model": "qwen-3-32b", "base_url": "https://api.cerebras.ai/v1",
        "connection": "cerebras", "key_name": "cerebras"}), 201)
    assert added["model"] == {"alias": "qwen-3-32b", "endpoint": "owui-cerebras", "served": "qwen-3-32b"}
    [update] = fake.updates
    assert update["OPENAI_API_BASE_URLS"][-1] == "https://api.cerebras.ai/v1"
    assert update["OPENAI_API_KEYS"] == [UPSTREAM_KEY, UPSTREAM_KEY, UPSTREAM_KEY]  # the others' sent back as they came
    assert update["OPENAI_API_CONFIGS"]["2"]["tags"] == [{"name": "cerebras"}]
    no_admin = ok(api.post("/api/endpoint", json={"name": "owui2", "base": base + "/api", "key": fake.api_key,
                                                  "hub": "openwebui"}), 201)
    assert no_admin["endpoint"]["admin_key_source"] is None
    refused = api.post("/api/hub/register", json={"endpoint": "owui2", "upstream_model": "m", "base_url":
                                                  "https://x.example/v1", "connection": "x"})
    assert refused.status_code == 502 and "owui2 (GET /openai/config): upstream 401" in refused.json()["error"]["message"]


def test_cli_proxy_api_providers_and_its_own_sign_ins(api: httpx.Client, net: Loopback) -> None:
    fake = FakeCLIProxy(own={"gemini-2.5-pro": "google", "gpt-5-codex": "openai"}, providers=[
        {"name": "openrouter", "base-url": "https://openrouter.ai/api/v1",
         "api-key-entries": [{"api-key": UPSTREAM_KEY, "proxy-url": ""}],
         "models": [{"name": "moonshotai/kimi-k2:free", "alias": "kimi-k2"}]}])
    base = net.serve(fake.app())
    ok(api.post("/api/endpoint", json={"name": "cpa", "base": base + "/v1", "key": fake.api_key, "hub": "cliproxy"}),
       201)
    ok(api.post("/api/endpoint/key", json={"name": "cpa", "key": fake.management_key, "admin": True}))
    listed = ok(api.get("/api/hub/upstreams", params={"endpoint": "cpa"}))["upstreams"]
    assert {(u["served"], u["connection"], u["upstream_model"]) for u in listed} == {
        ("gemini-2.5-pro", "google", "gemini-2.5-pro"), ("gpt-5-codex", "openai", "gpt-5-codex"),
        ("kimi-k2", "openrouter", "moonshotai/kimi-k2:free")}
    ok(api.post("/api/endpoint", json={"name": "groq", "base": "https://api.groq.com/openai/v1", "key": UPSTREAM_KEY}),
       201)
    added = ok(api.post("/api/hub/register", json={
        "endpoint": "cpa", "upstream_model": "qwen/qwen3-32b", "served": "qwen3", "base_url":
        "https://openrouter.ai/api/v1", "connection": "openrouter"}), 201)
    assert added["model"]["endpoint"] == "cpa-openrouter"
    assert fake.writes[-1][0] == "PATCH" and fake.providers[0]["models"][-1] == {"name": "qwen/qwen3-32b",
                                                                               "alias": "qwen3"}
    ok(api.post("/api/hub/register", json={
        "endpoint": "cpa", "upstream_model": "llama-3.1-8b-instant", "base_url": "https://api.groq.com/openai/v1",
        "connection": "groq", "key_name": "groq", "bench": False}), 201)
    method, sent = fake.writes[-1]
    assert method == "PUT" and sent[-1]["name"] == "groq" and sent[-1]["api-key-entries"] == [{"api-key": UPSTREAM_KEY}]
    assert ok(api.get("/api/hub/upstreams", params={"endpoint": "cpa"}))["upstreams"][-1]["connection"] == "groq"


def test_litellm_with_its_database_takes_a_new_model(api: httpx.Client, net: Loopback) -> None:
    fake = FakeLiteLLM(deployments=[{"model_name": "fast", "litellm_params": {
        "model": "groq/llama-3.1-8b-instant", "api_key": UPSTREAM_KEY}}])
    base = net.serve(fake.app())
    ok(api.post("/api/endpoint", json={"name": "lite", "base": base + "/v1", "key": "sk-virtual-0123456789",
                                       "hub": "litellm", "admin_key": fake.master_key}), 201)
    ok(api.post("/api/endpoint", json={"name": "deepinfra", "base": "https://api.deepinfra.com/v1/openai",
                                       "key": UPSTREAM_KEY}), 201)
    added = ok(api.post("/api/hub/register", json={
        "endpoint": "lite", "upstream_model": "Qwen/Qwen3-32B", "served": "qwen3", "base_url":
        "https://api.deepinfra.com/v1/openai", "connection": "deepinfra", "key_name": "deepinfra"}), 201)
    assert fake.deployments[-1]["litellm_params"] == {"model": "openai/Qwen/Qwen3-32B", "api_base":
                                                      "https://api.deepinfra.com/v1/openai", "api_key": UPSTREAM_KEY}
    assert added["sync"]["connections"] == {"groq": ["fast"], "api.deepinfra.com": ["qwen3"]}
    assert added["model"] == {"alias": "qwen3", "endpoint": "lite-api-deepinfra-com", "served": "qwen3"}
    not_a_hub = api.post("/api/hub/sync", json={"endpoint": "deepinfra"})
    assert not_a_hub.status_code == 400 and "is not a hub" in not_a_hub.json()["error"]["message"]
    removed = ok(api.post("/api/endpoint/remove", json={"name": "lite", "with_models": True}))
    assert removed["removed_routes"] == ["lite-api-deepinfra-com", "lite-groq"]
    assert {e["name"] for e in ok(api.get("/api/endpoints"))["endpoints"]} == {"deepinfra"}
