"""What ships around the server: the Claude Code plugin's pieces and its Stop hook against the app,
the Cursor plugin, ``server.json`` for the MCP registry. Judged by ``claude plugin validate`` and
the npx launcher run by node: tests/e2e/test_plugins_cli.py."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from benchwarmers_mcp import __version__
from benchwarmers_mcp.mcp.tools import SCHEMAS
from tests.kits.loopback import Loopback
from tests.kits.mcp import TOOLS, mcp_client, seed_bench

ROOT = Path(__file__).resolve().parent.parent
CLAUDE_PLUGIN = ROOT / "plugins" / "claude-code"
CURSOR_PLUGIN = ROOT / "plugins" / "cursor"
LAUNCHER = ROOT / "bin" / "benchwarmers.js"
TOOL_PREFIX = "mcp__plugin_benchwarmers_benchwarmers__"


def load(path: Path) -> Any:
    return json.loads(path.read_text())


def frontmatter(path: Path) -> dict[str, str]:
    """The simple ``key: value`` lines between the leading ``---`` fences."""
    text = path.read_text()
    assert text.startswith("---\n"), path
    head = text[4:text.index("\n---\n", 4)]
    out = {}
    for line in head.splitlines():
        key, _, value = line.partition(":")
        out[key.strip()] = value.strip().strip('"')
    return out


# ---- Claude Code ---------------------------------------------------------------------------------

def test_claude_plugin_pieces_name_the_real_tools() -> None:
    server = load(CLAUDE_PLUGIN / ".mcp.json")["mcpServers"]["benchwarmers"]
    assert server["type"] == "http"
    assert server["headers"] == {"Authorization": "Bearer ${BENCHWARMERS_KEY:-}"}
    assert server["timeout"] >= 900_000  # a panel can take minutes
    allowed = frontmatter(CLAUDE_PLUGIN / "commands" / "ask.md")["allowed-tools"].split()
    assert allowed and all(t.startswith(TOOL_PREFIX) and t[len(TOOL_PREFIX):] in TOOLS for t in allowed)
    [stop] = load(CLAUDE_PLUGIN / "hooks" / "hooks.json")["hooks"]["Stop"]
    [hook] = stop["hooks"]
    assert hook["tool"] == "pending_verdicts"
    assert set(hook["input"]) <= set(SCHEMAS["pending_verdicts"]["properties"])
    skill = frontmatter(CLAUDE_PLUGIN / "skills" / "benchwarmers" / "SKILL.md")
    assert skill["name"] == "benchwarmers" and "verdict" in skill["description"]


def interpolate(template: Any, event: dict[str, Any]) -> Any:
    """What Claude Code does to an mcp_tool hook's ``input``: each ``${field}`` becomes the hook input's
    value as text (JSON spelling for booleans)."""
    def text(value: Any) -> str:
        return json.dumps(value) if isinstance(value, bool) else str(value)

    if isinstance(template, str):
        return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_.]*)\}", lambda m: text(event.get(m[1], "")), template)
    return {k: interpolate(v, event) for k, v in template.items()}


@pytest.fixture
def base(home: Path, request: pytest.FixtureRequest) -> str:
    seed_bench(home)
    return request.getfixturevalue("gateway")


@pytest.mark.anyio
async def test_stop_hook_reaches_the_plugin_server_and_answers_as_a_stop_hook(base: str, tmp_path: Path,
                                                                             net: Loopback) -> None:
    url = load(CLAUDE_PLUGIN / ".mcp.json")["mcpServers"]["benchwarmers"]["url"]
    url = url.replace("${BENCHWARMERS_URL:-http://127.0.0.1:8122}", base)
    [hook] = load(CLAUDE_PLUGIN / "hooks" / "hooks.json")["hooks"]["Stop"][0]["hooks"]
    transcript = tmp_path / "session.jsonl"
    async with mcp_client(net, url) as client:
        asked = await client.call_tool("ask", {"collection": "core", "prompt": "Is this safe?"})
        transcript.write_text(json.dumps({"type": "user", "message": {"content": [
            {"type": "tool_result", "content": [{"type": "text", "text": c.text} for c in asked.content]}]}}) + "\n")
        event = {"session_id": "9f1c", "transcript_path": str(transcript), "hook_event_name": "Stop",
                 "stop_hook_active": False}
        first = await client.call_tool(hook["tool"], interpolate(hook["input"], event))
        second = await client.call_tool(hook["tool"], interpolate(hook["input"], event))
        active = await client.call_tool(hook["tool"], interpolate(hook["input"], {**event, "session_id": "other",
                                                                                  "stop_hook_active": True}))
    output = json.loads(first.content[0].text)
    assert set(output) == {"hookSpecificOutput"}
    assert output["hookSpecificOutput"]["hookEventName"] == "Stop"
    assert "have no verdict yet" in output["hookSpecificOutput"]["additionalContext"]
    assert second.content[0].text == "" and active.content[0].text == ""


# ---- Cursor --------------------------------------------------------------------------------------

CURSOR_FIELDS = {"name", "displayName", "description", "version", "author", "publisher", "homepage", "repository",
                 "license", "logo", "keywords", "category", "tags", "minClientVersions", "skills", "rules", "agents",
                 "commands", "hooks", "mcpServers", "variables"}


def test_cursor_plugin_manifest_and_parts() -> None:
    manifest = load(CURSOR_PLUGIN / ".cursor-plugin" / "plugin.json")
    assert set(manifest) <= CURSOR_FIELDS
    assert re.fullmatch(r"[a-z0-9]([a-z0-9.-]*[a-z0-9])?", manifest["name"])
    for key in ("skills", "rules", "mcpServers"):
        assert (CURSOR_PLUGIN / manifest[key]).exists(), key
    server = load(CURSOR_PLUGIN / manifest["mcpServers"])["mcpServers"]["benchwarmers"]
    package = load(ROOT / "package.json")["name"]
    assert server["command"] == "npx" and server["args"] == ["-y", package, "mcp"]
    rule = frontmatter(CURSOR_PLUGIN / "rules" / "benchwarmers.mdc")
    assert rule["description"] and rule["alwaysApply"] == "false"
    skill = frontmatter(CURSOR_PLUGIN / "skills" / "benchwarmers" / "SKILL.md")
    assert skill["name"] == "benchwarmers" and skill["description"]


# ---- packaging -----------------------------------------------------------------------------------

def test_versions_and_names_agree_across_the_packages() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    package = load(ROOT / "package.json")
    server = load(ROOT / "server.json")
    plugins = [load(CLAUDE_PLUGIN / ".claude-plugin" / "plugin.json"), load(CURSOR_PLUGIN / ".cursor-plugin" / "plugin.json")]
    assert {pyproject["version"], package["version"], server["version"], __version__,
            *(p["version"] for p in plugins)} == {__version__}
    assert package["mcpName"] == server["name"]
    assert package["bin"] == {"benchwarmers": "bin/benchwarmers.js", "bench": "bin/bench.js"}
    assert "@anthropic-ai/claude-code" in package["devDependencies"]
    assert len(server["description"]) <= 100
    by_registry = {p["registryType"]: p for p in server["packages"]}
    assert by_registry["npm"]["identifier"] == package["name"]
    assert by_registry["pypi"]["identifier"] == pyproject["name"]
    for entry in by_registry.values():
        assert entry["version"] == __version__ and entry["transport"] == {"type": "stdio"}
        assert [(a["type"], a["value"]) for a in entry["packageArguments"]] == [("positional", "mcp")]
        env = {e["name"]: e for e in entry["environmentVariables"]}
        assert set(env) == {"BENCHWARMERS_URL", "BENCHWARMERS_KEY", "BENCHWARMERS_TIMEOUT"}
        assert env["BENCHWARMERS_KEY"]["isSecret"] is True
        assert not env["BENCHWARMERS_URL"].get("isSecret")


