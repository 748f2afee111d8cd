"""Issue 29: the Claude Code CLI defers the plugin's MCP tools behind its tool search, and a collection
in route mode carries the search to the member: ToolSearch's result (``tool_reference`` blocks) as the
tool names it references, the referenced tool offered in full.

What Claude Code 2.1.332 does, found by running it against this gateway with ``--debug`` (its log in
``$HOME/.claude/debug/``) and from the strings of its binary:

- ``ENABLE_TOOL_SEARCH`` decides: unset or ``true`` is its mode ``tst`` (``[ToolSearch:optimistic]
  mode=tst`` in the log), which defers every MCP tool, a custom ``ANTHROPIC_BASE_URL`` included;
  ``auto`` / ``auto:N`` defer only when the tool definitions pass N% of the context window (10 by
  default: the plugin's four tools never do); ``false`` never defers. The test sets ``true``.
- The first request offers the built-in tools, ``ToolSearch`` and a ``DeferredToolPlaceholder`` (with
  ``defer_loading: true``); the deferred tools are named in a system message. When the model calls
  ToolSearch (``{"query": "select:<name>"}``), the next request carries that tool with ``defer_loading:
  true`` and a ``tool_result`` whose content is ``[{"type": "tool_reference", "tool_name": <name>}]``.
- Refused with a 400, it sends that request three times, then once more without deferred tools (the
  references replaced by ``[Tool references removed - tool search not enabled]``, every tool declared
  in full) and keeps tool search off for the rest of the process.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import routes
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.route import read, route_server_on_socket, said, seed_members, tool_call

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("npm")]  # see test_route_claude_code.py

ROOT = Path(__file__).resolve().parents[2]
CLAUDE = ROOT / "node_modules" / ".bin" / "claude"
PLUGIN = ROOT / "plugins" / "claude-code"
FALLBACK = "Tool references removed"  # what Claude Code puts in their place once it gives up deferring


def searcher():
    """The member: finds the plugin's list_collections among the deferred names, asks ToolSearch for it,
    calls it once it is offered, and answers from its result."""

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        offered = {t["function"]["name"] for t in body.get("tools", [])}
        last = body["messages"][-1]
        if last["role"] == "tool" and last["content"].startswith("[{"):
            return said(f"The tool said: {last['content']}")
        named = re.search(r"mcp__\w*benchwarmers\w*__list_collections", json.dumps(body["messages"]))
        if named is None:
            return said("ok")  # a side request (a title, a summary)
        if named.group(0) in offered:
            return tool_call("call_list_1", named.group(0), {})
        if "ToolSearch" in offered and last["role"] != "tool":
            return tool_call("call_search_1", "ToolSearch", {"query": f"select:{named.group(0)}", "max_results": 5})
        return said("ToolSearch found nothing")

    return reply


def warm_up_mcp(base: str) -> None:
    """One MCP handshake first: the server starts its MCP side on the first request (the SDK is most of
    a cold start), which can outlast Claude Code's 5 s version probe on a busy machine."""
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "warm-up", "version": "0"}}}
    reply = httpx.post(base + "/mcp", json=hello, timeout=120,
                       headers={"Accept": "application/json, text/event-stream"})
    assert reply.status_code == 200, reply.text


def test_claude_code_finds_a_deferred_plugin_tool_through_tool_search(settings: Settings, home: Path, upstream: str,
                                                                     fake: FakeUpstream, tmp_path: Path) -> None:
    assert CLAUDE.exists(), "run `npm install` in the project folder for the Claude Code CLI"
    secret = f"review{secrets.token_hex(4)}"  # a collection only the tool's answer names
    fake.responders["alpha"] = searcher()
    seed_members(home, upstream, {"alpha": "alpha"}, {"agents": ["alpha"], secret: ["alpha"]}, max_output=8192)
    (tmp_path / "cchome").mkdir()
    work = tmp_path / "work"
    work.mkdir()
    with route_server_on_socket(settings) as base:
        warm_up_mcp(base)
        env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path / "cchome"), "ANTHROPIC_BASE_URL": base,
               "ANTHROPIC_API_KEY": "anything", "ANTHROPIC_DEFAULT_HAIKU_MODEL": "bench/agents:route",
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
               "ENABLE_TOOL_SEARCH": "true", "BENCHWARMERS_URL": base, "MCP_CONNECTION_NONBLOCKING": "0"}
        done = subprocess.run([str(CLAUDE), "-p", "Which collections does the bench have? Use its tool.",
                               "--model", "bench/agents:route", "--plugin-dir", str(PLUGIN),
                               "--allowedTools", "ToolSearch,mcp__plugin_benchwarmers_benchwarmers__list_collections"],
                              cwd=work, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    assert secret in done.stdout, done.stdout[-2000:]
    bodies = [c.body for c in fake.calls if c.model == "alpha"]
    assert not any(FALLBACK in json.dumps(b["messages"]) for b in bodies), "Claude Code gave up deferring"
    first = next(b for b in bodies if "ToolSearch" in {t["function"]["name"] for t in b.get("tools", [])})
    offered = [t["function"]["name"] for t in first["tools"]]
    assert not any("list_collections" in name for name in offered), "deferred: not offered before the search"
    assert "DeferredToolPlaceholder" not in offered, "never referenced, so never offered"
    searched = next(b for b in bodies if b["messages"][-1]["role"] == "tool"
                    and b["messages"][-1]["tool_call_id"] == "call_search_1")
    name = searched["messages"][-1]["content"]
    assert re.fullmatch(r"mcp__plugin_benchwarmers_benchwarmers__list_collections", name), name
    assert name in {t["function"]["name"] for t in searched["tools"]}, "referenced: offered in full"
    turns = [(t["alias"], t["status"]) for t in read(home, routes.turns_of)]
    assert turns and all(status == "ok" for _, status in turns), turns
