"""MCP over streamable HTTP on the server's own port, judged by the official ``mcp`` client against the
app in-process: the tool list, ``ask`` with progress, ``verdict``, ``list_collections``, refusals as
``isError`` results, both protocol eras, ``/mcp`` and ``/v1/mcp``, and the same Host and key checks
as ``/v1``."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import httpx
import httpx2
import pytest

from benchwarmers_mcp.access import gateway_keys
from benchwarmers_mcp.messages import estimate_text_tokens
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import calls
from tests.kits import mcp as kit
from tests.kits.loopback import Loopback
from tests.kits.mcp import TOOLS, Seen, assert_panel, mcp_client, seed_bench, summary_of
from tests.kits.store import store_of, url_for

pytestmark = pytest.mark.anyio

# The MCP tests' own fixtures: keep-alives every 0.5 s, and a seeded bench behind the gateway.
settings, base = kit.settings, kit.base


# ---- the tool list -----------------------------------------------------------------------------

async def test_tool_list_is_strict_small_and_carries_the_rules(base: str, net: Loopback) -> None:
    async with mcp_client(net, base + "/mcp") as client:
        assert client.server_info.name == "benchwarmers"
        assert client.server_info.title == "Benchwarmers"
        assert "agreement is not evidence" in (client.instructions or "")
        listed = await client.list_tools()
    tools = {t.name: t for t in listed.tools}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.input_schema["type"] == "object"
        assert tool.input_schema["additionalProperties"] is False
        assert tool.title and tool.description
    assert tools["ask"].input_schema["required"] == ["collection", "prompt"]
    assert set(tools["ask"].input_schema["properties"]) == {"collection", "prompt", "system", "merged", "with"}
    assert tools["verdict"].input_schema["required"] == ["call", "useful"]
    assert set(tools["verdict"].input_schema["properties"]) == {"call", "useful", "note", "real", "false", "claims"}
    assert tools["verdict"].input_schema["properties"]["claims"]["items"]["additionalProperties"] is False
    assert set(tools["pending_verdicts"].input_schema["properties"]) == {"session", "transcript", "active",
                                                                         "collection", "limit"}
    assert "type" not in tools["pending_verdicts"].input_schema["properties"]["active"]
    assert tools["verdict"].annotations.idempotent_hint is True
    assert tools["list_collections"].annotations.read_only_hint is True
    assert tools["ask"].annotations.open_world_hint is True
    for rule in ("not a favourite model", "real text", "Verify every claim", "name every seat", "verdict per"):
        assert rule in tools["ask"].description
    assert "real" in tools["verdict"].description and "false" in tools["verdict"].description
    wire = json.dumps(listed.model_dump(mode="json", by_alias=True, exclude_none=True))
    assert estimate_text_tokens(wire) < 2000


# ---- ask, verdict, list_collections over both eras and both paths --------------------------------

@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize("path", ["/mcp", "/v1/mcp"])
async def test_ask_with_progress_then_verdict(base: str, mode: str, path: str, net: Loopback, http: httpx.Client) -> None:
    seen = Seen()
    async with mcp_client(net, base + path, mode=mode) as client:
        assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
        result = await client.call_tool("ask", {"collection": "core", "prompt": "Where can this go stale?"},
                                        progress_callback=seen)
        summary = assert_panel(result, seen)
        assert [s["alias"] for s in summary["seats"][:2]] == ["sage", "quill"]
        assert {s["status"] for s in summary["seats"]} == {"ok"}
        call = summary["seats"][0]["call"]
        verdict = {"call": call, "useful": True, "note": "checked", "real": ["the cache is refreshed late"],
                   "false": ["the loop is off by one"]}
        recorded = await client.call_tool("verdict", verdict)
        again = await client.call_tool("verdict", verdict)
    assert not recorded.is_error
    assert recorded.content[0].text == f"Recorded {call}: useful, 1 real, 1 false."
    assert again.content[0].text == f"Already recorded {call}: useful, 1 real, 1 false (unchanged)."
    async with net.aclient() as http:
        record = (await http.get(base + "/bench/record", params={"collection": "bench/core"})).json()
    assert record["aliases"]["sage"]["useful"] == 1


async def test_ask_names_errors_nominees_and_system(base: str, home: Path, net: Loopback) -> None:
    seen = Seen()
    async with mcp_client(net, base + "/mcp") as client:
        result = await client.call_tool("ask", {"collection": "bench/shaky", "prompt": "Review this.",
                                                "system": "Be terse.", "with": ["ferret"]},
                                        progress_callback=seen)
    summary = assert_panel(result, seen, "bench/shaky")
    seats = {s["alias"]: s for s in summary["seats"]}
    assert seats["mole"]["status"] == "error" and "500" in seats["mole"]["error"]
    assert seats["ferret"]["seat"] == "explorer"
    assert "_error:" in result.content[0].text
    async with store_of(home) as db:
        panel = await calls.panel(db, summary["panel"])
    assert panel is not None and (panel.system, panel.prompt, panel.key_name) == ("Be terse.", "Review this.", "local")


async def test_merged_ask_reports_the_merge(base: str, net: Loopback) -> None:
    seen = Seen()
    async with mcp_client(net, base + "/mcp") as client:
        result = await client.call_tool("ask", {"collection": "core", "prompt": "Pick one.", "merged": True},
                                        progress_callback=seen)
    assert not result.is_error
    summary = summary_of(result)
    seats = len(summary["seats"])
    assert summary["merger"]["call"] == summary["panel"] + ".merger"
    assert all(s.get("answer") for s in summary["seats"])  # merged: the seats' own answers ride along
    assert "Merged by" in result.content[0].text
    assert seen.values[-1] == seats + 1
    assert f"{seats} of {seats} seats answered; merging" in seen.messages
    assert seen.messages[-1] == "merged"


async def test_list_collections(base: str, net: Loopback) -> None:
    async with mcp_client(net, base + "/mcp", mode="legacy") as client:
        result = await client.call_tool("list_collections", {})
    assert not result.is_error
    listed = {c["name"]: c for c in json.loads(result.content[0].text)}
    assert set(listed) == {"core", "shaky"}
    core = listed["core"]
    assert core["members"] == ["sage", "quill"]
    assert core["explorers"] == 2 and core["reply"] == "all"
    assert {"description", "tags", "shape", "merger", "context_window", "capabilities"} <= set(core)


async def test_empty_bench_says_how_to_make_a_collection(gateway: str, net: Loopback) -> None:
    async with mcp_client(net, gateway + "/mcp") as client:
        result = await client.call_tool("list_collections", {})
    assert not result.is_error
    assert result.content[0].text.startswith("No collections yet")


# ---- refusals ----------------------------------------------------------------------------------

async def test_refusals_are_tool_errors_with_clear_text(base: str, net: Loopback) -> None:
    async with mcp_client(net, base + "/mcp") as client:
        unknown = await client.call_tool("ask", {"collection": "nope", "prompt": "x"})
        extra = await client.call_tool("ask", {"collection": "core", "prompt": "x", "model": "gpt"})
        missing = await client.call_tool("verdict", {"call": "p20200101-000000-abcd.member1"})
        no_call = await client.call_tool("verdict", {"call": "p20200101-000000-abcd.member1", "useful": True})
        bad_with = await client.call_tool("ask", {"collection": "core", "prompt": "x", "with": ["nobody"]})
        still = await client.call_tool("list_collections", {})
    assert unknown.is_error
    assert unknown.content[0].text.startswith("Benchwarmers refused ask (404): unknown collection 'nope'")
    assert extra.is_error and "model" in extra.content[0].text and "Extra inputs" in extra.content[0].text
    assert missing.is_error and "useful" in missing.content[0].text
    assert no_call.is_error
    assert no_call.content[0].text.startswith("Benchwarmers refused verdict (404): no call with id")
    assert not bad_with.is_error  # an unknown nominee is skipped and said so, never a failure
    assert "nobody" in json.dumps(summary_of(bad_with).get("skipped", []))
    assert not still.is_error  # no refusal ever took the session down


# ---- transport: no redirect, Host and key checks as on /v1 ---------------------------------------

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "raw", "version": "1"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.mark.parametrize("path", ["/mcp", "/v1/mcp", "/mcp/"])
def test_post_initialize_answers_in_place_without_redirect(base: str, path: str, http: httpx.Client) -> None:
    response = http.post(base + path, json=INITIALIZE, headers=MCP_HEADERS, follow_redirects=False)
    assert response.status_code == 200
    assert response.headers.get("mcp-session-id")
    assert '"protocolVersion":"2025-06-18"' in response.text.replace(" ", "")


def test_unknown_host_is_refused_in_json_rpc_shape(base: str, http: httpx.Client) -> None:
    response = http.post(base + "/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "Host": "evil.example:80"})
    assert response.status_code == 403
    body = response.json()
    assert body["jsonrpc"] == "2.0" and body["id"] is None
    assert "Host" in body["error"]["message"]


def test_foreign_origin_is_refused(base: str, http: httpx.Client) -> None:
    response = http.post(base + "/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "Origin": "https://evil.example"})
    assert response.status_code == 403
    assert "Origin" in response.json()["error"]["message"]


def test_the_sdk_check_and_the_guard_share_one_policy() -> None:
    from benchwarmers_mcp.mcp.server import transport_security

    s = Settings.from_env({}, home=Path("/nowhere"), config_dir=Path("/nowhere"), port=8122,
                          allowed_hosts=("bench.lan",), allowed_origins=("https://app.example",))
    sdk = transport_security(s)
    assert "bench.lan:8122" in sdk.allowed_hosts and "127.0.0.1:8122" in sdk.allowed_hosts
    assert "127.0.0.1:9999" not in sdk.allowed_hosts, "the guard allows this server's own port only"
    assert "http://bench.lan:8122" in sdk.allowed_origins, "a page on an allowed host is same-origin to the guard"
    assert "https://app.example" in sdk.allowed_origins


def test_bad_remind_bodies_are_refused(base: str, http: httpx.Client) -> None:
    for body in ({"calls": []}, {"session": "s", "calls": "p1.member1"}, {"session": "", "calls": []}):
        response = http.post(base + "/bench/remind", json=body)
        assert response.status_code == 400
        assert response.json()["error"]["code"] == 400


class TestKeys:
    """With keys required, ``/mcp`` wants a gateway key, and a key's scope holds inside the tools."""

    @pytest.fixture
    def settings(self, home: Path) -> Settings:
        return Settings.from_env({}, home=home, config_dir=home.parent / "config", require_keys=True,
                                 database_url=url_for(home))

    @pytest.fixture
    def scoped_key(self, home: Path) -> str:
        seed_bench(home)

        async def make() -> str:
            async with store_of(home) as db:
                _, secret = await gateway_keys.create(db, "shaky-only", ["shaky"])
                return secret

        return anyio.run(make)

    def test_no_key_is_401(self, scoped_key: str, gateway: str, http: httpx.Client) -> None:
        for auth in ({}, {"Authorization": "Bearer"}):  # the plugin with no key set sends an empty Bearer
            response = http.post(gateway + "/mcp", json=INITIALIZE, headers={**MCP_HEADERS, **auth})
            assert response.status_code == 401
            assert response.json()["error"]["message"].startswith(("missing gateway key", "malformed"))

    async def test_scope_applies_to_ask_and_list(self, scoped_key: str, gateway: str, home: Path, net: Loopback) -> None:
        headers = {"Authorization": f"Bearer {scoped_key}"}
        async with mcp_client(net, gateway + "/mcp", headers=headers, timeout=httpx2.Timeout(30, read=120)) as client:
            listed = await client.call_tool("list_collections", {})
            refused = await client.call_tool("ask", {"collection": "core", "prompt": "x"})
            allowed = await client.call_tool("ask", {"collection": "shaky", "prompt": "x"})
        assert [c["name"] for c in json.loads(listed.content[0].text)] == ["shaky"]
        assert refused.is_error
        assert refused.content[0].text.startswith("Benchwarmers refused ask (403): gateway key 'shaky-only'")
        assert not allowed.is_error
        panel = summary_of(allowed)["panel"]
        async with store_of(home) as db:
            asked = await calls.panel(db, panel)
        assert asked is not None and asked.key_name == "shaky-only"


def test_get_is_405_so_no_stream_outlives_the_server(base: str, http: httpx.Client) -> None:
    response = http.get(base + "/mcp", headers={"Accept": "text/event-stream"})
    assert response.status_code == 405
    assert set(response.headers["allow"].split(", ")) == {"POST", "DELETE"}  # a set: order varies by run
    assert response.json()["jsonrpc"] == "2.0"
