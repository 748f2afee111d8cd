"""A damaged store, from the console scripts (issue 31.8): ``benchwarmers serve`` refuses it in one
line that names the file and what to do; ``benchwarmers doctor`` says what is damaged, and
``--repair`` puts a checked copy of what is readable in place, keeping the damaged file; the
repaired store serves; a clean stop marks the file so the next start need not read all of it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import pytest

from tests.kits.damage import damage_middle, filled_store
from tests.kits.servers import free_port, server_env, spawn_server

pytestmark = pytest.mark.e2e
SCRIPT = Path(sys.executable).parent / "benchwarmers"


@pytest.fixture(scope="module")
def whole(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("whole") / "benchwarmers.db"
    anyio.run(filled_store, path)
    return path


@pytest.fixture
def home(whole: Path, tmp_path: Path) -> Path:
    home = tmp_path / "data"
    home.mkdir()
    shutil.copyfile(whole, home / "benchwarmers.db")
    return home


def run(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {**server_env(home, free_port()), **env}
    return subprocess.run([str(SCRIPT), *args], env=environment, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)


def test_a_damaged_store_is_refused_then_repaired_and_serves(home: Path) -> None:
    db = home / "benchwarmers.db"
    damage_middle(db)
    damaged = db.read_bytes()

    refused = run(home, "serve")
    assert refused.returncode == 1 and refused.stdout == ""
    [line] = refused.stderr.strip().splitlines()
    assert line.startswith(f"benchwarmers: the database {db} is damaged (")
    assert "restore it from a backup, or run `benchwarmers doctor`" in line and "Traceback" not in refused.stderr
    assert db.read_bytes() == damaged

    checked = run(home, "doctor")
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert checked.stdout.startswith(f"{db} (") and "DAMAGED" in checked.stdout.splitlines()[0]
    assert "row(s) readable; the rest is on pages that cannot be read" in checked.stdout
    assert "`benchwarmers doctor --repair`" in checked.stdout
    assert db.read_bytes() == damaged  # the check only reads

    repaired = run(home, "doctor", "--repair")
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr
    assert "copied what was readable into" in repaired.stdout and "start the server again" in repaired.stdout
    [kept] = home.glob("benchwarmers.db.damaged-*[0-9]")
    assert kept.read_bytes() == damaged
    assert run(home, "doctor").returncode == 0

    with spawn_server(home) as base:
        status = httpx.get(base + "/api/status", timeout=30)
        assert status.status_code == 200, status.text
        assert status.json()["counts"]["models"] == 5  # the demo's bench, saved
    assert (home / "benchwarmers.db-clean").exists()  # a clean stop left its mark
    with spawn_server(home) as base:  # the marked file starts without a full check, and serves
        assert httpx.get(base + "/api/status", timeout=30).status_code == 200


def test_a_repair_waits_for_the_servers_on_the_store(home: Path) -> None:
    with spawn_server(home):
        damage_middle(home / "benchwarmers.db", seed=7)  # while it serves
        busy = run(home, "doctor", "--repair")
    assert busy.returncode == 2, busy.stdout + busy.stderr
    assert "stop them first" in busy.stderr
    assert not list(home.glob("*.damaged-*")) and not list(home.glob("*.recovered-*"))


def test_the_doctor_leaves_postgresql_to_its_own_tools(tmp_path: Path) -> None:
    done = run(tmp_path / "data", "doctor", BENCHWARMERS_DATABASE_URL="postgresql://bench:pw@127.0.0.1:9/bench")
    assert done.returncode == 2 and "pg_amcheck" in done.stderr and "pw" not in done.stderr
