"""Issue 31.3 and 31.4, what a newcomer reads: Discover's "free" is callable with a free key at no
charge (a subscription plan's $0 models are labelled so and left out), chat models unless every
kind is asked for, a row's endpoints are the ones that serve it; the README's running example
names a model the shipped catalog knows; past times read "3 min ago", never "(passed)"; the
Changes log is in words, never a Python repr."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from benchwarmers_mcp.catalog.snapshot import load_snapshot
from benchwarmers_mcp.cli import tables
from benchwarmers_mcp.settings import Settings
from tests.catalog.kit import FakeProvider, Outbound, add_endpoint, gateway, listed, post, register

ROOT = Path(__file__).resolve().parents[1]
NOW = 1_800_000_000.0


async def _discover(api: Any, **query: str) -> list[dict[str, Any]]:
    reply = await api.get("/api/discover", params={"limit": "2000", **query})
    assert reply.status_code == 200, reply.text
    return list(reply.json()["rows"])


@pytest.mark.anyio
async def test_free_means_a_free_key_at_no_charge_and_non_chat_models_wait_to_be_asked_for(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    async with gateway(settings, Outbound({}), monkeypatch) as api:
        free = await _discover(api, free="1")
        assert free and all(r["free"] and not r["subscription"] and r["kind"] == "chat" for r in free)
        assert not [r["key"] for r in free if r["provider"] in ("github-copilot", "zai-coding-plan", "gitlab")]
        assert not [r["key"] for r in free if "lyria" in r["key"] or "embed" in r["key"]], "no music, no embeddings"
        plans = await _discover(api, provider="github-copilot")
        assert plans and all(r["subscription"] and not r["free"] for r in plans), "labelled a subscription"
        chat = {r["key"] for r in await _discover(api, find="lyria")}
        every = {r["key"]: r["kind"] for r in await _discover(api, find="lyria", every_kind="1")}
        assert not chat and every.get("openrouter/google/lyria-3-pro-preview") == "audio"
        omni = {r["key"]: r["kind"] for r in await _discover(api, find="gpt-5.1", provider="azure")}
        assert omni.get("azure/gpt-5.1") == "chat", "a chat model that also speaks is a chat model"
        page = (await api.get("/discover", params={"provider": "github-copilot"})).text
        assert 'title="a monthly plan: its $0 per token is paid by the plan">subscription</span>' in page


@pytest.mark.anyio
async def test_a_discover_row_offers_the_endpoints_that_serve_it_not_every_endpoint(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    outbound = Outbound({"openrouter.ai": FakeProvider(listed=listed("poolside/laguna-m.1:free")).app("/api/v1"),
                         "api.groq.com": FakeProvider(listed=listed("llama-3.3-70b-versatile")).app("/openai/v1")})
    async with gateway(settings, outbound, monkeypatch) as api:
        await add_endpoint(api, "openrouter", "https://openrouter.ai/api/v1")
        await add_endpoint(api, "groq", "https://api.groq.com/openai/v1")
        page = (await api.get("/discover", params={"find": "laguna-m.1:free", "provider": "openrouter"})).text
    row = re.search(r'<tr data-key="openrouter/poolside/laguna-m.1:free".*?</tr>', page, re.S)
    assert row, "the row is listed"
    offered = re.findall(r'<option value="([^"]+)">[^<]*\((?:direct|via hub|by name)\)</option>', row.group(0))
    assert offered == ["openrouter"], f"only what serves it, never the default or any other: {offered}"


def test_the_readme_running_example_is_a_model_the_shipped_catalog_knows() -> None:
    _, entries = load_snapshot()
    known = {e.key for e in entries}
    for doc in ("README.md", "docs/CLI.md"):
        text = (ROOT / doc).read_text()
        examples = re.findall(r"bench model register (\S+) --endpoint (openrouter|groq)\b", text)
        assert examples, f"{doc} has a running example"
        for served, endpoint in examples:
            assert f"{endpoint}/{served}" in known, f"{doc}: {endpoint}/{served} is not in the shipped catalog"


def test_times_read_as_ago_or_in_never_passed() -> None:
    assert tables.when(NOW - 180, NOW) == "2027-01-15 07:57 UTC (3 min ago)"
    assert tables.when(NOW + 300, NOW) == "2027-01-15 08:05 UTC (in 5 min)"
    assert tables.ago(NOW - 7200 - 300, NOW) == "2 h 5 min ago" and tables.ago(None) == "never"


@pytest.mark.anyio
async def test_the_changes_log_is_in_words(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeProvider(listed=listed("sage-model"))
    async with gateway(settings, Outbound({"api.prov.test": fake.app("/v1")}), monkeypatch) as api:
        await add_endpoint(api, "prov", "https://api.prov.test/v1")
        await register(api, "sage-model", "prov")
        await post(api, "/api/collection", {"name": "core", "members": ["sage-model"]}, 201)
        await post(api, "/api/model/retire", {"alias": "sage-model", "reason": "confidently wrong"}, 200)
        page = (await api.get("/logs")).text
    changes = page.split('id="change-log"', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r'<tr data-search="[^"]*" data-what="([^"]+)">(.*?)</tr>', changes, re.S)
    said = {what: re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", cells)).strip() for what, cells in rows}
    assert "retired model sage-model why: confidently wrong" in said["model.retire"], said
    assert said["model.register"].startswith(said["model.register"].split(" registered model")[0])
    assert "registered model sage-model" in said["model.register"]
    for text in said.values():
        assert not re.search(r"[{}\[\]]|'|\w=\w|None|True|False", text), f"a Python repr: {text}"
