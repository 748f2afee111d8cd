"""``bench status`` with only BENCH_PORT set (the way the server was started) reaches that server
and says how it found it; with nothing there it says where it looked (issue 31.7)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.kits.cli import BENCH, cli_env
from tests.kits.servers import free_port, spawn_server

pytestmark = pytest.mark.e2e


def bench(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = cli_env("", **env)
    environment.pop("BENCHWARMERS_URL")
    assert BENCH is not None
    return subprocess.run([BENCH, *args], env=environment, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)


def test_bench_status_finds_the_server_on_bench_port(tmp_path: Path) -> None:
    port = free_port()
    with spawn_server(tmp_path / "data", port):
        done = bench("status", BENCH_PORT=str(port))
        assert done.returncode == 0, done.stderr
        assert f"(listening on 127.0.0.1:{port}; found at http://127.0.0.1:{port} through BENCH_PORT={port})" \
            in done.stdout.splitlines()[0]
        assert bench("status", "--json", BENCH_PORT=str(port)).returncode == 0


def test_with_nothing_there_it_names_where_it_looked() -> None:
    port = free_port()
    done = bench("status", BENCH_PORT=str(port))
    assert done.returncode == 3
    assert f"no Benchwarmers server at http://127.0.0.1:{port} (ConnectError, the URL from BENCH_PORT={port})" \
        in done.stderr
