"""``benchwarmers mcp`` (the installed console script) as a stdio MCP server, driven by the official
``mcp`` client: forwarding to a real server with progress, the same tools as ``/mcp``, and a clean
start with no server behind it. Nothing but JSON-RPC may reach stdout."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from mcp import Client

from benchwarmers_mcp.mcp.stdio import config_from_env
from tests.kits import mcp as kit
from tests.kits.mcp import TOOLS, Seen, assert_panel, benchwarmers_script, stdio, summary_of
from tests.kits.servers import free_port
from tests.kits.waits import START

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

# The /mcp tests' own fixtures: keep-alives every 0.5 s, and a seeded bench behind a real gateway.
settings, base = kit.settings, kit.base


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_stdio_forwards_to_the_server(base: str, mode: str) -> None:
    seen = Seen()
    async with Client(stdio(base + "/v1/"), mode=mode) as client:  # a trailing /v1 is dropped
        assert client.server_info.name == "benchwarmers"
        remote_tools = {t.name: t for t in (await client.list_tools()).tools}
        listed = await client.call_tool("list_collections", {})
        result = await client.call_tool("ask", {"collection": "core", "prompt": "Where can this go stale?",
                                                "merged": False}, progress_callback=seen)
        summary = assert_panel(result, seen)
        call = summary["seats"][1]["call"]
        verdict = await client.call_tool("verdict", {"call": call, "useful": False, "false": ["a claim"]})
        unknown = await client.call_tool("verdict", {"call": summary["panel"] + ".member9", "useful": True})
    async with Client(base + "/mcp") as http:
        http_tools = {t.name: t for t in (await http.list_tools()).tools}
    assert set(remote_tools) == TOOLS
    for name, tool in remote_tools.items():  # one contract, whichever way it is reached
        assert tool.input_schema == http_tools[name].input_schema
        assert tool.description == http_tools[name].description
    names = [c["name"] for c in json.loads(listed.content[0].text)]
    assert sorted(names) == ["core", "shaky"]  # the :mode duplicates of /v1/models are skipped
    core = next(c for c in json.loads(listed.content[0].text) if c["name"] == "core")
    assert set(core["ratings"]) == {"sage", "quill"}, "each member's rating, as over HTTP"
    assert verdict.content[0].text == f"Recorded {call}: not useful, 0 real, 1 false."
    assert unknown.is_error
    assert unknown.content[0].text.startswith("Benchwarmers refused POST /bench/verdict (404): no call with id")


async def test_stdio_refusals_come_back_as_tool_errors(base: str) -> None:
    async with Client(stdio(base)) as client:
        unknown = await client.call_tool("ask", {"collection": "nope", "prompt": "x"})
        merged = await client.call_tool("ask", {"collection": "bench/core:all", "prompt": "x", "merged": True})
    assert unknown.is_error
    assert unknown.content[0].text.startswith(
        "Benchwarmers refused POST /v1/chat/completions (404): unknown collection 'nope'")
    assert not merged.is_error
    assert summary_of(merged)["merger"]["call"].endswith(".merger")  # the tool's own flag wins over the suffix
    assert "Merged by" in merged.content[0].text


async def test_stdio_with_no_server_starts_lists_and_explains() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    async with Client(stdio(url)) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        results = [await client.call_tool("list_collections", {}),
                   await client.call_tool("ask", {"collection": "core", "prompt": "x"}),
                   await client.call_tool("verdict", {"call": "p20200101-000000-abcd.member1", "useful": True})]
    assert tools == TOOLS
    for result in results:
        assert result.is_error
        text = result.content[0].text
        assert text.startswith(f"Benchwarmers is not running at {url}.")
        assert "`benchwarmers`" in text and "`benchwarmers demo`" in text


def test_stdout_carries_only_the_protocol() -> None:
    """Raw lines in, raw lines out: every line on stdout is a JSON-RPC message."""
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "list_collections", "arguments": {}}},
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCHWARMERS_", "BENCH_"))}
    env["BENCHWARMERS_URL"] = f"http://127.0.0.1:{free_port()}"
    with subprocess.Popen([benchwarmers_script(), "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, env=env, text=True) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        for message in messages:
            proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()
        replies = [json.loads(proc.stdout.readline()) for _ in range(3)]  # one per request, nothing else
        proc.stdin.close()
        assert proc.stdout.read() == ""
        proc.wait(timeout=START)
    assert [r["id"] for r in replies] == [1, 2, 3]
    assert all(r["jsonrpc"] == "2.0" for r in replies)
    assert {t["name"] for t in replies[1]["result"]["tools"]} == TOOLS
    assert replies[2]["result"]["isError"] is True
    assert proc.returncode == 0


def test_remote_settings_from_the_environment() -> None:
    remote = config_from_env({"BENCHWARMERS_URL": "http://box:9000/v1/", "BENCHWARMERS_KEY": " bwk_x ",
                              "BENCHWARMERS_TIMEOUT": "30"})
    assert (remote.url, remote.key, remote.timeout) == ("http://box:9000", "bwk_x", 30.0)
    assert remote.auth(admin=False) == {"Authorization": "Bearer bwk_x"}
    default = config_from_env({"BENCHWARMERS_TIMEOUT": "soon"})
    assert (default.url, default.key, default.timeout) == ("http://127.0.0.1:8122", None, 900.0)
    assert default.auth(admin=False) == {}
