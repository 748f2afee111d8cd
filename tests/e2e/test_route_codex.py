"""The Codex CLI itself (``codex exec``), with its default features, driven by a collection in route
mode. Its config is docs/ROUTE.md's Codex set-up as written (the provider and Benchwarmers' own MCP
server), plus a second MCP server whose tool name is too long for chat completions. The member (a
scripted fake upstream) runs a shell command, calls each MCP server's tool (namespaced, one of them
shortened), and answers from what came back. Codex is kept off the internet: no login, its home in
a temporary folder, no update check, and every proxy variable pointing at a port that refuses."""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import routes
from tests.fakes.mcp_scribe import LONG_NAME
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.route import read, route_server_on_socket, said, seed_members, tool_call

ROOT = Path(__file__).resolve().parents[2]
CODEX = ROOT / "node_modules" / ".bin" / "codex"
SCRIBE = ROOT / "tests" / "fakes" / "mcp_scribe.py"
DOCUMENTED_PORT = "http://127.0.0.1:8122"


def documented_config() -> str:
    """The TOML blocks of docs/ROUTE.md's Codex section, as a reader would copy them."""
    text = (ROOT / "docs" / "ROUTE.md").read_text()
    section = text.split("### Codex", 1)[1].split("\n### ", 1)[0]
    blocks = re.findall(r"```toml\n(.*?)```", section, re.S)
    assert len(blocks) == 2, "the Codex section shows the provider and an MCP server"
    return "\n".join(blocks)


def codex_home(where: Path, base: str) -> Path:
    """A CODEX_HOME with the documented config (pointed at this gateway and this venv's
    ``benchwarmers``; its MCP server, the last table, gets a start-up timeout for a busy machine),
    the scribe MCP server, and no update check, analytics or feedback."""
    home = where / "codex-home"
    home.mkdir()
    benchwarmers = Path(sys.executable).parent / "benchwarmers"
    config = documented_config().replace(DOCUMENTED_PORT, base).replace(
        'command = "benchwarmers"', f"command = {json.dumps(str(benchwarmers))}")
    scribe = f"""startup_timeout_sec = 120
[mcp_servers.scribe_of_the_benchwarmers_test_suite]
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(SCRIBE))}]
required = true
startup_timeout_sec = 120
default_tools_approval_mode = "approve"

[analytics]
enabled = false

[feedback]
enabled = false
"""
    (home / "config.toml").write_text("check_for_update_on_startup = false\n" + config + scribe)
    return home


def offered(body: dict[str, Any]) -> dict[str, str]:
    """The member's tools: name -> description."""
    return {t["function"]["name"]: t["function"].get("description", "") for t in body.get("tools", [])}


def worker(work: Path, secret: str):
    """The member, step by step from how many tool results it has: a shell command, the scribe's
    tool (found by its description, as a model would), Benchwarmers' list_collections, an answer."""

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        tools = offered(body)
        if "exec_command" not in tools:
            return said("ok")  # a side request, if Codex makes one
        done = [m for m in body["messages"] if m["role"] == "tool"]
        if not done:
            return tool_call("call_sh", "exec_command", {"cmd": f"printf '%s' shell-{secret} > shell.txt"})
        if len(done) == 1:
            scribe = next(n for n, d in tools.items() if d.startswith("Write the text into the file"))
            return tool_call("call_scribe", scribe, {"path": str(work / "scribe.txt"), "text": f"scribe-{secret}"})
        if len(done) == 2:
            return tool_call("call_list", "mcp__benchwarmers__list_collections", {})
        return said(f"All three tools ran: {secret}.")

    return reply


# xdist_group npm: the CLIs come from node_modules, which the `claude` fixture of test_plugins_cli.py
# installs when it is missing; these tests run on that one worker, after it (and never two
# `npm install` at once)
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("npm")]


@pytest.fixture
def refusing_proxy():
    """A loopback port that is bound but never listens: every connection to it is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


def test_codex_exec_runs_namespaced_and_shortened_tools_through_a_route_turn(
        settings: Settings, home: Path, upstream: str, fake: FakeUpstream, tmp_path: Path,
        refusing_proxy: str) -> None:
    assert CODEX.exists(), "run `npm install` in the project folder for the Codex CLI"
    secret = secrets.token_hex(6)
    work = tmp_path / "work"
    work.mkdir()
    fake.responders["alpha"] = worker(work, secret)
    seed_members(home, upstream, {"alpha": "alpha"}, {"core": ["alpha"]}, max_output=8192)
    with route_server_on_socket(settings) as base:
        env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "CODEX_HOME": str(codex_home(tmp_path, base)),
               "BENCH_API_KEY": "local", "HTTPS_PROXY": refusing_proxy, "HTTP_PROXY": refusing_proxy,
               "ALL_PROXY": refusing_proxy, "NO_PROXY": "127.0.0.1,localhost"}
        done = subprocess.run([str(CODEX), "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
                               "Write the files, then list the collections."],
                              cwd=work, env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"All three tools ran: {secret}." in done.stdout, done.stderr[-3000:]
    assert (work / "shell.txt").read_text() == f"shell-{secret}", "Codex ran the member's shell command"
    assert (work / "scribe.txt").read_text() == f"scribe-{secret}", "Codex ran the shortened, namespaced MCP tool"

    first = fake.calls[0].body
    names = offered(first)
    assert "web_search" not in json.dumps(first["tools"]), "the hosted web search is left out"
    assert "mcp__benchwarmers__list_collections" in names
    shortened = [n for n in names if n.startswith("mcp__scribe_of_the_benchwarmers_test_suite")]
    assert len(shortened) == 1 and len(shortened[0]) <= 64 and LONG_NAME not in shortened[0]
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{1,64}", n) for n in names)

    results = [m["content"] for m in fake.calls[-1].body["messages"] if m["role"] == "tool"]
    assert len(results) == 3
    assert f"wrote {len('scribe-' + secret)} characters" in results[1]
    listed = json.loads(results[2].split("Output:\n", 1)[1])
    assert [(c["name"], c["members"]) for c in listed] == [("core", ["alpha"])], \
        "Benchwarmers' MCP server answered the namespaced call, which Codex ran"
    tool_turns = [(t["alias"], t["status"], t["tool_calls"]) for t in read(home, routes.turns_of)]
    assert tool_turns == [("alpha", "ok", 1)] * 3 + [("alpha", "ok", 0)]
