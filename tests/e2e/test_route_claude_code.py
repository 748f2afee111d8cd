"""The Claude Code CLI itself, driven by a collection in route mode: the member (a fake upstream)
asks for a tool, Claude Code runs it, and the member answers from the tool's result."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
from pathlib import Path
from typing import Any

import pytest

from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import routes
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.route import read, route_server_on_socket, said, seed_members, tool_call

# xdist_group npm: the CLIs come from node_modules, which the `claude` fixture of test_plugins_cli.py
# installs when it is missing; these tests run on that one worker, after it (and never two
# `npm install` at once)
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("npm")]

CLAUDE = Path(__file__).resolve().parents[2] / "node_modules" / ".bin" / "claude"


def reader(notes: Path):
    """The member: asks Claude Code to Read the notes, then answers from what the tool returned.
    Any other request (a side request Claude Code may make) gets a plain short answer."""

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return said(f"From the file: {last['content']}")
        offered = {t["function"]["name"] for t in body.get("tools", [])}
        asked = any("notes.txt" in json.dumps(m.get("content")) for m in body["messages"] if m["role"] == "user")
        if "Read" in offered and asked:
            return tool_call("call_read_1", "Read", {"file_path": str(notes)})
        return said("ok")

    return reply


def test_claude_code_runs_a_tool_and_the_member_answers_from_it(settings: Settings, home: Path, upstream: str,
                                                                fake: FakeUpstream, tmp_path: Path) -> None:
    assert CLAUDE.exists(), "run `npm install` in the project folder for the Claude Code CLI"
    secret = secrets.token_hex(8)
    work = tmp_path / "work"
    work.mkdir()
    notes = work / "notes.txt"
    notes.write_text(f"The launch code is {secret}.\n")
    fake.responders["alpha"] = reader(notes)
    seed_members(home, upstream, {"alpha": "alpha"}, {"agents": ["alpha"]}, max_output=8192)
    (tmp_path / "cchome").mkdir()
    with route_server_on_socket(settings) as base:
        env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path / "cchome"), "ANTHROPIC_BASE_URL": base,
               "ANTHROPIC_API_KEY": "anything", "ANTHROPIC_DEFAULT_HAIKU_MODEL": "bench/agents:route",
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}
        done = subprocess.run([str(CLAUDE), "-p", "What is the launch code in notes.txt? Read the file.",
                               "--model", "bench/agents:route", "--allowedTools", "Read"],
                              cwd=work, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"The launch code is {secret}" in done.stdout
    results = [m["content"] for c in fake.calls for m in c.body["messages"] if m["role"] == "tool"]
    assert any(secret in r for r in results), "the tool result Claude Code sent back came from reading the file"
    tool_turns = [(t["alias"], t["status"], t["tool_calls"]) for t in read(home, routes.turns_of) if t["tool_calls"] > 0]
    assert tool_turns == [("alpha", "ok", 1)]
