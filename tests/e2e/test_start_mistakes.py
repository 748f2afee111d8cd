"""Every start-up mistake is one clear line on stderr and a non-zero exit, with nothing made first:
a port that is not a number or out of range, a port in use (``serve`` and ``demo``), a data folder
that cannot be made or written, a file where the folder should be, a bad bind address. Each runs the
console script as a real process; the data folder and the config folder are left as they were. And
``benchwarmers demo`` keeps its keys in its own temporary config folder, never the user's."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.kits.security import ADMIN_TOKEN
from tests.kits.servers import free_port, server_env, wait_healthy
from tests.kits.waits import ANSWER, START

pytestmark = pytest.mark.e2e
SCRIPT = Path(sys.executable).parent / "benchwarmers"


def run(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = server_env(home, free_port())
    environment.update(env)
    return subprocess.run([str(SCRIPT), *args], env=environment, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)


def assert_one_line(done: subprocess.CompletedProcess[str], *words: str) -> str:
    lines = done.stderr.strip().splitlines()
    assert done.returncode != 0, done.stderr
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == "", (done.stdout, done.stderr)
    line = lines[0]
    assert line.startswith("benchwarmers: "), line
    for word in words:
        assert word in line, (word, line)
    return line


@pytest.fixture
def fresh(tmp_path: Path) -> Path:
    """A data folder that does not exist yet, next to a config folder that does not either."""
    return tmp_path / "data"


def assert_untouched(home: Path) -> None:
    assert not home.exists(), "the data folder was made before the refusal"
    assert not (home.parent / "config").exists(), "the config folder was made before the refusal"


@pytest.mark.parametrize(("port", "words"), [("abc", ("BENCH_PORT", "1 to 65535", "'abc'")),
                                            ("70000", ("BENCH_PORT", "1 to 65535", "'70000'")),
                                            ("-1", ("BENCH_PORT",)), ("0", ("BENCH_PORT",))])
def test_a_port_that_is_not_a_port(fresh: Path, port: str, words: tuple[str, ...]) -> None:
    for command in ("serve", "demo"):
        assert_one_line(run(fresh, command, BENCH_PORT=port), *words)
        assert_untouched(fresh)


def test_other_numbers_are_checked_too(fresh: Path) -> None:
    assert_one_line(run(fresh, "serve", BENCH_SEAT_TIMEOUT="soon"), "BENCH_SEAT_TIMEOUT", "seconds")
    assert_one_line(run(fresh, "serve", BENCH_BODY_TIMEOUT="-5"), "BENCH_BODY_TIMEOUT")
    assert_untouched(fresh)


@pytest.fixture
def taken() -> Iterator[int]:
    """A port some other program listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def test_a_port_in_use(fresh: Path, taken: int) -> None:
    for command in ("serve", "demo"):
        line = assert_one_line(run(fresh, command, BENCH_PORT=str(taken)), "in use", "BENCH_PORT", str(taken))
        assert "another" in line
        assert_untouched(fresh)


def test_a_bad_bind_address(fresh: Path) -> None:
    assert_one_line(run(fresh, "serve", BENCH_BIND="not..an..address"), "BENCH_BIND", "not an address")
    assert_untouched(fresh)
    # a well-formed address this machine does not have (TEST-NET-1), past the token check
    assert_one_line(run(fresh, "serve", BENCH_BIND="192.0.2.1", BENCHWARMERS_ADMIN_TOKEN=ADMIN_TOKEN),
                    "192.0.2.1", "BENCH_BIND")
    assert_untouched(fresh)


def test_a_file_where_the_data_folder_should_be(tmp_path: Path) -> None:
    home = tmp_path / "data"
    home.write_text("not a folder")
    assert_one_line(run(home, "serve"), str(home), "is a file")
    assert home.read_text() == "not a folder"
    assert_one_line(run(home / "inside", "serve"), str(home / "inside"), "cannot be made", "is a file")
    assert_one_line(run(home, "init"), "is a file")
    assert not (tmp_path / "config").exists()


def test_a_data_folder_that_cannot_be_made_or_written() -> None:
    # /proc takes no new folders, and its own folders take no files, whoever runs the test
    assert_one_line(run(Path("/proc/benchwarmers-test/data"), "serve"), "/proc/benchwarmers-test/data")
    assert_one_line(run(Path("/proc/self/fdinfo"), "serve"), "/proc/self/fdinfo")
    assert not Path("/proc/benchwarmers-test").exists()


def test_a_database_that_is_not_one(tmp_path: Path) -> None:
    home = tmp_path / "data"
    home.mkdir()
    (home / "benchwarmers.db").write_bytes(b"not a database " * 20)
    assert_one_line(run(home, "serve"), "cannot open the database", str(home / "benchwarmers.db"))
    assert (home / "benchwarmers.db").read_bytes() == b"not a database " * 20


def test_demo_keeps_its_keys_in_its_own_config_folder(tmp_path: Path) -> None:
    home, config, port = tmp_path / "data", tmp_path / "config", free_port()
    env = server_env(home, port)
    proc = subprocess.Popen([str(SCRIPT), "demo"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, stdin=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_healthy(base, proc)
        saved = httpx.post(base + "/api/endpoint/key", json={"name": "simulated", "key": "sk-demo-only-123"}, timeout=ANSWER)
        assert saved.status_code == 200, saved.text
        listed = httpx.get(base + "/api/endpoints", timeout=ANSWER).json()
        assert "keys file" in str(listed), listed
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=START)
    assert not config.exists() and not home.exists(), "the demo wrote into the user's folders"
    folder = Path(err.split("data in ", 1)[1].split(" (removed", 1)[0])
    assert not folder.exists(), "the demo's temporary folder, its keys with it, is removed when it stops"
