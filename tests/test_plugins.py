"""What ships around the server: the Claude Code plugin and marketplace (judged by the real
``claude plugin validate``), the Cursor plugin, ``server.json`` for the MCP registry, and the npx
launcher (``node bin/benchwarmers.js``), which must run ``benchwarmers mcp`` with stdio passed
straight through and signals forwarded."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from benchwarmers_mcp import __version__
from benchwarmers_mcp.mcp.tools import SCHEMAS
from tests.test_mcp_http import TOOLS, seed_bench

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

@pytest.fixture(scope="session")
def claude() -> str:
    """The Claude Code CLI from npm (``npm install`` in the checkout when it is missing)."""
    cli = ROOT / "node_modules" / ".bin" / "claude"
    if not cli.exists():
        subprocess.run(["npm", "install", "--no-audit", "--no-fund"], cwd=ROOT, check=True, timeout=600,
                       capture_output=True)
    return str(cli)


def validate(claude: str, target: Path, home: Path) -> dict[str, Any]:
    env = {**os.environ, "HOME": str(home)}
    done = subprocess.run([claude, "plugin", "validate", "--strict", "--json", str(target)], capture_output=True,
                          text=True, env=env, timeout=120)
    report = json.loads(done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr
    return report


def test_claude_plugin_passes_claude_plugin_validate(claude: str, tmp_path: Path) -> None:
    report = validate(claude, CLAUDE_PLUGIN, tmp_path)
    assert report["success"] is True and report["strict"] is True
    assert report["manifest"]["errors"] == [] and report["manifest"]["warnings"] == []
    provides = report["provides"]
    assert provides["mcpServers"] == [{"name": "benchwarmers", "type": "http",
                                       "target": "${BENCHWARMERS_URL:-http://127.0.0.1:8122}/mcp"}]
    assert provides["commands"] == ["benchwarmers:ask"]
    assert provides["skills"] == ["benchwarmers:benchwarmers"]
    assert provides["hooks"] == [{"event": "Stop", "type": "mcp_tool", "server": "plugin:benchwarmers:benchwarmers",
                                  "tool": "pending_verdicts"}]


def test_marketplace_passes_claude_plugin_validate(claude: str, tmp_path: Path) -> None:
    report = validate(claude, ROOT, tmp_path)
    assert report["success"] is True
    market = load(ROOT / ".claude-plugin" / "marketplace.json")
    assert market["name"] == "benchwarmers"  # /plugin install benchwarmers@benchwarmers
    [entry] = market["plugins"]
    assert entry["name"] == "benchwarmers"
    assert (ROOT / entry["source"]).resolve() == CLAUDE_PLUGIN
    assert load(CLAUDE_PLUGIN / ".claude-plugin" / "plugin.json")["name"] == "benchwarmers"


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
async def test_stop_hook_reaches_the_plugin_server_and_answers_as_a_stop_hook(base: str, tmp_path: Path) -> None:
    url = load(CLAUDE_PLUGIN / ".mcp.json")["mcpServers"]["benchwarmers"]["url"]
    url = url.replace("${BENCHWARMERS_URL:-http://127.0.0.1:8122}", base)
    [hook] = load(CLAUDE_PLUGIN / "hooks" / "hooks.json")["hooks"]["Stop"][0]["hooks"]
    transcript = tmp_path / "session.jsonl"
    async with Client(url) as client:
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
    assert package["bin"] == {"benchwarmers": "bin/benchwarmers.js"}
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


# ---- the npx launcher ----------------------------------------------------------------------------

def node() -> str:
    path = shutil.which("node")
    assert path, "node is needed for the npx launcher (the CI installs it with npm)"
    return path


def launcher_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCHWARMERS_", "BENCH_"))}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.update(extra)
    return env


@pytest.mark.anyio
@pytest.mark.parametrize("explicit", [False, True])
async def test_npx_launcher_runs_mcp_and_answers_tools_list(base: str, explicit: bool) -> None:
    extra = {"BENCHWARMERS_PYTHON": sys.executable, "PATH": "/nonexistent"} if explicit else {}
    params = StdioServerParameters(command=node(), args=[str(LAUNCHER), "mcp"],
                                   env=launcher_env(BENCHWARMERS_URL=base, **extra))
    async with Client(params, mode="legacy") as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        listed = await client.call_tool("list_collections", {})
    assert tools == TOOLS
    assert sorted(c["name"] for c in json.loads(listed.content[0].text)) == ["core", "shaky"]


def test_npx_launcher_passes_arguments_and_exit_codes() -> None:
    version = subprocess.run([node(), str(LAUNCHER), "--version"], capture_output=True, text=True,
                             env=launcher_env(), timeout=60)
    assert (version.returncode, version.stdout.strip()) == (0, f"benchwarmers {__version__}")
    bad = subprocess.run([node(), str(LAUNCHER), "init", "--no-such-flag"], capture_output=True, text=True,
                         env=launcher_env(), timeout=60)
    assert bad.returncode == 2 and bad.stdout == ""


def test_npx_launcher_without_python_explains_on_stderr(tmp_path: Path) -> None:
    done = subprocess.run([node(), str(LAUNCHER), "mcp"], capture_output=True, text=True, timeout=60,
                          env={"PATH": str(tmp_path), "HOME": str(tmp_path)})
    assert done.returncode == 127
    assert done.stdout == ""  # an MCP client reads stdout: never a word there
    assert "pip install benchwarmers" in done.stderr and "uvx" in done.stderr


def test_npx_launcher_forwards_signals_to_the_server() -> None:
    env = launcher_env(BENCHWARMERS_URL="http://127.0.0.1:9")
    with subprocess.Popen([node(), str(LAUNCHER), "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, env=env, text=True) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                 "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
        proc.stdin.write(json.dumps(hello) + "\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 1  # the Python server is up behind node
        children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
        assert len(children) == 1
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == -signal.SIGTERM  # the child's fate, passed on as node's own
    assert not Path(f"/proc/{children[0]}").exists()
