"""Settings and the store's target at start-up, through the console script as a real process: a
setting that is not a number (``BENCH_SCHEDULER_TICK=abc``) and a database string that is neither a
URL nor a path (libpq's ``host=... password=...``, a URL whose password's ``/`` is not
percent-encoded) are one line on stderr and exit 2, with the password masked and nothing made (no
data folder, no file named after the string); and the start-up line names the store without its
password, on both backends (PostgreSQL by a URL with a password, SQLite by a path)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.kits.servers import free_port, server_env, spawn_server
from tests.kits.store import url_for

pytestmark = pytest.mark.e2e
SCRIPT = Path(sys.executable).parent / "benchwarmers"
PASSWORD = "Hunter2-Secret"


def run(home: Path, cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = server_env(home, free_port())
    environment.update(env)
    return subprocess.run([str(SCRIPT), *args], env=environment, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL, cwd=cwd)


def one_line(done: subprocess.CompletedProcess[str], code: int, *words: str) -> str:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == code and len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == "", (done.stdout, done.stderr)
    assert lines[0].startswith("benchwarmers: refusing to start: "), lines[0]
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


def test_a_scheduler_tick_that_is_not_a_number(tmp_path: Path) -> None:
    home = tmp_path / "data"
    for command in ("serve", "demo", "init"):
        one_line(run(home, tmp_path, command, BENCH_SCHEDULER_TICK="abc"), 2, "BENCH_SCHEDULER_TICK", "'abc'",
                 "seconds")
    assert list(tmp_path.iterdir()) == [], "nothing was made"


@pytest.mark.parametrize(("target", "words"), [
    (f"host=127.0.0.1 port=5432 user=bench password={PASSWORD} dbname=bw", ("keyword/value", "password=***")),
    (f"postgresql://bench:pa/{PASSWORD}@127.0.0.1:5432/bw", ("percent-encoded", "bench:***@127.0.0.1")),
])
def test_a_database_string_that_is_neither_a_url_nor_a_path(tmp_path: Path, target: str,
                                                             words: tuple[str, ...]) -> None:
    home = tmp_path / "data"
    for command in ("serve", "init"):
        line = one_line(run(home, tmp_path, command, BENCHWARMERS_DATABASE_URL=target), 2,
                        "BENCHWARMERS_DATABASE_URL", "postgresql://user:password@host:port/db", *words)
        assert PASSWORD not in line
    assert list(tmp_path.iterdir()) == [], "no SQLite file named after the string, no data folder"


@pytest.mark.backends
def test_the_start_up_line_names_the_store_without_its_password(home: Path, tmp_path: Path,
                                                               store_backend: str) -> None:
    log = tmp_path / "server.log"
    password = "p%40ss%2Fw0rd-Sh0uld-never-show"
    url = url_for(home)
    if store_backend == "postgresql":  # the test cluster trusts loopback: a password is accepted and unused
        assert url is not None
        target = url.replace("postgres@", f"postgres:{password}@")
    else:
        target = str(tmp_path / "elsewhere.db")
    with spawn_server(home, log=log, BENCHWARMERS_DATABASE_URL=target):
        pass
    (line,) = [ln for ln in log.read_text().splitlines() if ln.startswith("Benchwarmers on ")]
    assert "w0rd-Sh0uld-never-show" not in log.read_text() and "p@ss" not in log.read_text()
    if store_backend == "postgresql":
        assert "store: postgresql postgresql://postgres:***@127.0.0.1:" in line, line
    else:
        assert f"store: sqlite {tmp_path / 'elsewhere.db'})" in line, line
