"""What ships around the server, judged by the tools that run it: the Claude Code plugin and
marketplace by the real ``claude plugin validate`` (npm), and the npx launcher (``node
bin/benchwarmers.js``), which must run ``benchwarmers mcp`` with stdio passed straight through and
signals forwarded. The manifests themselves: tests/test_plugins.py."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from benchwarmers_mcp import __version__
from tests.kits.mcp import TOOLS, seed_bench
from tests.kits.waits import START

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
CLAUDE_PLUGIN = ROOT / "plugins" / "claude-code"
LAUNCHER = ROOT / "bin" / "benchwarmers.js"


def load(path: Path) -> Any:
    return json.loads(path.read_text())


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


@pytest.mark.xdist_group("npm")  # with the other users of node_modules: one `npm install` at most
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


@pytest.mark.xdist_group("npm")
def test_marketplace_passes_claude_plugin_validate(claude: str, tmp_path: Path) -> None:
    report = validate(claude, ROOT, tmp_path)
    assert report["success"] is True
    market = load(ROOT / ".claude-plugin" / "marketplace.json")
    assert market["name"] == "benchwarmers"  # /plugin install benchwarmers@benchwarmers
    [entry] = market["plugins"]
    assert entry["name"] == "benchwarmers"
    assert (ROOT / entry["source"]).resolve() == CLAUDE_PLUGIN
    assert load(CLAUDE_PLUGIN / ".claude-plugin" / "plugin.json")["name"] == "benchwarmers"


@pytest.fixture
def base(home: Path, request: pytest.FixtureRequest) -> str:
    seed_bench(home)
    return request.getfixturevalue("gateway")


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
        assert proc.wait(timeout=START) == -signal.SIGTERM  # the child's fate, passed on as node's own
    assert not Path(f"/proc/{children[0]}").exists()
