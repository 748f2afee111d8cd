"""Shared set-up for the CLI tests (no tests here): the ``bench`` commands run in-process against the
test's loopback (``client.main`` with a transport, stdin piped, stdout and stderr captured, its own
environment), or as the installed console scripts in a subprocess, optionally on a terminal."""

from __future__ import annotations

import io
import os
import pty
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path

import httpx
import pytest

from benchwarmers_mcp.cli import client
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.loopback import Loopback

BIN = str(Path(sys.executable).parent)
BENCH = shutil.which("bench", path=BIN)
LONG_NAME = shutil.which("benchwarmers", path=BIN)
SECRET = "sk-cli-secret-5f0e1d2c3b4a69788796a5b4"
SERVED = ["vendor/alpha", "vendor/beta:free", "other/gamma", "other/delta"]

Bench = Callable[..., "subprocess.CompletedProcess[str]"]


def cli_env(url: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCHWARMERS_", "BENCH_"))}
    env["BENCHWARMERS_URL"] = url
    env.update(extra)
    return env


def ok(result: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert result.returncode == 0, (result.args, result.stdout, result.stderr)
    return result


# ---- in-process ----------------------------------------------------------------------------------

@contextmanager
def environment(env: dict[str, str]) -> Iterator[None]:
    """``os.environ`` is ``env`` for the block (what a subprocess would have been given)."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def run_in_process(net: Loopback, url: str, *args: str, stdin: str = "", program: str | None = None,
                   **env: str) -> subprocess.CompletedProcess[str]:
    """One ``bench`` command as the console script would run it, with ``stdin`` piped in (never a
    terminal), against the servers on ``net`` (anything else over the network, as from a shell)."""
    argv = [program or BENCH or "bench", *args]
    out, err = io.StringIO(), io.StringIO()
    saved = sys.argv, sys.stdin
    sys.argv, sys.stdin = argv, io.StringIO(stdin)
    try:
        with environment(cli_env(url, **env)), redirect_stdout(out), redirect_stderr(err):
            code = client.main(list(args), transport=net.transport(httpx))
    finally:
        sys.argv, sys.stdin = saved
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())


@pytest.fixture
def bench(net: Loopback) -> Bench:
    """``bench(url, *args, stdin="", program=None, **env)``: a command, in-process (see run_in_process)."""
    return lambda url, *args, **kwargs: run_in_process(net, url, *args, **kwargs)


# ---- the installed console scripts ---------------------------------------------------------------

def run_script(url: str, *args: str, stdin: str = "", program: str | None = None,
               **env: str) -> subprocess.CompletedProcess[str]:
    """Run the console script with ``stdin`` piped in (so stdin is never a terminal)."""
    return subprocess.run([program or BENCH or "bench", *args], input=stdin, capture_output=True, text=True,
                          env=cli_env(url, **env), timeout=60)


def on_terminal(url: str, *args: str, answer: str) -> subprocess.CompletedProcess[str]:
    """Run with stdin a pseudo-terminal that types ``answer``; stdout and stderr stay pipes."""
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen([BENCH or "bench", *args], stdin=slave, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=cli_env(url))
        os.close(slave)
        os.write(master, answer.encode())
        out, err = proc.communicate(timeout=60)
    finally:
        os.close(master)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def with_terminal_stderr(url: str, *args: str) -> tuple[int, str, str]:
    """Run with stderr a pseudo-terminal; returns (exit code, stdout, what the terminal showed)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([BENCH or "bench", *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=slave, text=True, env=cli_env(url))
    os.close(slave)
    out, _ = proc.communicate(timeout=60)
    shown = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.close(master)
    return proc.returncode, out, shown.decode("utf-8", "replace")


# ---- fixtures (import them into a test module to use them) ---------------------------------------

@pytest.fixture
def served(fake: FakeUpstream) -> FakeUpstream:
    fake.served[:] = SERVED
    return fake


@pytest.fixture
def bench_with_models(gateway: str, upstream: str, served: FakeUpstream, net: Loopback) -> str:
    """A server with the fake endpoint and alpha, beta-free, gamma registered, in collection core (the
    loopback's client reaches a real server too, under tests/e2e/)."""
    with net.client(base_url=gateway, timeout=60) as api:  # a busy machine is slow, not wrong
        api.post("/api/endpoint", json={"name": "fake", "base": upstream, "key": SECRET}).raise_for_status()
        for name in SERVED[:3]:
            api.post("/api/model/register", json={"served": name, "endpoint": "fake"}).raise_for_status()
        api.post("/api/collection", json={"name": "core", "members": ["alpha", "beta-free", "gamma"],
                                          "description": "code review"}).raise_for_status()
        api.post("/api/gateway-settings", json={"max_explorers": 0}).raise_for_status()
    return gateway
