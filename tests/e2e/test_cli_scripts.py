"""The installed ``bench`` / ``benchwarmers`` console scripts as subprocesses, against real servers on
free ports and the fake OpenAI-compatible upstream: they are installed and answer --help and
--version, confirmations and progress need a terminal (a pseudo-terminal here), and a key reaches
neither an argument list, the data folder nor the server's log. Every command in-process:
tests/test_cli.py."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.fakes.openai_upstream import FakeUpstream
from tests.kits import cli as kit
from tests.kits.cli import (
    BENCH,
    BIN,
    LONG_NAME,
    SECRET,
    Bench,
    cli_env,
    ok,
    on_terminal,
    with_terminal_stderr,
)
from tests.kits.cli import run_script as bench
from tests.kits.servers import spawn_server
from tests.kits.waits import ANSWER

pytestmark = pytest.mark.e2e

# ``bench`` here is the console script; ``in_process`` the same command run in this process.
served, bench_with_models, in_process = kit.served, kit.bench_with_models, kit.bench


def test_the_console_scripts_are_installed() -> None:
    assert BENCH and LONG_NAME, f"bench and benchwarmers must be installed in {BIN}"


def test_help_from_the_installed_scripts() -> None:
    url = "http://127.0.0.1:9"
    top = ok(bench(url, "--help"))
    assert "benchwarmers serve | demo | init | mcp" in top.stdout
    for command in ("status", "ask", "verdict", "models", "candidates", "collections", "settings", "quotas", "keys"):
        assert command in top.stdout
    ask = ok(bench(url, "ask", "--help", program=LONG_NAME))
    assert "git diff | bench ask core" in ask.stdout
    retire = ok(bench(url, "model", "retire", "--help"))
    assert "--yes" in retire.stdout and "examples:" in retire.stdout
    assert ok(bench(url, "--version")).stdout.startswith("benchwarmers ")


def test_progress_shows_only_on_a_terminal(gateway: str, upstream: str, served: FakeUpstream) -> None:
    with httpx.Client(base_url=gateway, timeout=ANSWER) as api:
        api.post("/api/endpoint", json={"name": "fake", "base": upstream}).raise_for_status()
        served.served.append("slow?latency=0.5")  # the fake lists it, as registration checks
        api.post("/api/model/register", json={"served": "slow?latency=0.5", "endpoint": "fake",
                                               "alias": "slow"}).raise_for_status()
        api.post("/api/collection", json={"name": "slow", "members": ["slow"]}).raise_for_status()
    code, out, shown = with_terminal_stderr(gateway, "ask", "slow", "hello")
    assert code == 0 and "answer from slow" in out
    assert "bench/slow · 0 seats answered" in shown
    assert "seats answered" not in out
    piped = ok(bench(gateway, "ask", "slow", "hello"))
    assert "seats answered" not in piped.stderr


def test_retire_asks_on_a_terminal_and_refuses_without_one(bench_with_models: str, in_process: Bench) -> None:
    """The script refuses on a pipe and asks on a terminal; the checks between run in-process."""
    def status() -> str:
        return json.loads(ok(in_process(bench_with_models, "models", "--all", "--find", "gamma", "--json")).stdout)[
            "models"][0]["status"]

    refused = bench(bench_with_models, "model", "retire", "gamma", "--reason", "testing")
    assert refused.returncode == 2
    assert "stdin is not a terminal" in refused.stderr and "--yes" in refused.stderr
    assert status() != "retired"

    declined = on_terminal(bench_with_models, "model", "retire", "gamma", "--reason", "testing", answer="n\n")
    assert declined.returncode == 1
    assert "Retire gamma?" in declined.stderr and "[y/N]" in declined.stderr and "cancelled" in declined.stderr
    assert status() != "retired"

    accepted = on_terminal(bench_with_models, "model", "retire", "gamma", "--reason", "testing", answer="y\n")
    assert accepted.returncode == 0, accepted.stderr
    assert accepted.stdout.strip() == "retired gamma: testing"
    assert "still listed in: core" in accepted.stderr
    assert status() == "retired"

    restored = ok(in_process(bench_with_models, "model", "restore", "gamma"))
    assert restored.stdout.strip() == "restored gamma (untested)"  # its one status (engine/roster.py)
    scripted = ok(in_process(bench_with_models, "model", "retire", "gamma", "--yes", "--reason", "scripted"))
    assert "retired gamma: scripted" in scripted.stdout
    assert status() == "retired"


def test_an_endpoint_key_reaches_only_the_key_store(tmp_path: Path, upstream: str, served: FakeUpstream,
                                                    in_process: Bench) -> None:
    """Through a real server process and the real script: the keys file has it; the data folder, every
    argv and the log do not (the commands that use the key after it is stored run in-process)."""
    home = tmp_path / "data"
    log = tmp_path / "server.log"
    with spawn_server(home, log=log) as base:
        proc = subprocess.Popen([BENCH, "endpoint", "add", "fake", "--base", upstream, "--key-stdin"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=cli_env(base))
        argv = Path(f"/proc/{proc.pid}/cmdline").read_bytes()
        out, err = proc.communicate(SECRET + "\n", timeout=60)
        assert proc.returncode == 0, err
        assert "added endpoint fake" in out and "key store" in err
        ok(in_process(base, "endpoint", "test", "fake"))
        ok(in_process(base, "candidates"))
        running = [p.read_bytes() for p in Path("/proc").glob("[0-9]*/cmdline") if p.exists()]
    assert SECRET.encode() not in argv
    assert not any(SECRET.encode() in cmdline for cmdline in running)
    keys_file = tmp_path / "config" / "keys.json"
    assert json.loads(keys_file.read_text()) == {"fake": SECRET}
    assert keys_file.stat().st_mode & 0o777 == 0o600
    files = [p for p in home.rglob("*") if p.is_file()]
    assert files, "the data folder has the database"
    for path in files:
        assert SECRET.encode() not in path.read_bytes(), path
    assert log.exists() and SECRET not in log.read_text(errors="replace")
    assert SECRET not in out + err
