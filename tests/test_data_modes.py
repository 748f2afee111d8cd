"""A data folder or SQLite store that others on the machine may read (an older release made them
0755 and 0644) is reported by ``bench status`` and ``benchwarmers doctor``, each with the chmod that
makes it private; once run, nothing is reported (issue 31.9, store/modes.py)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import anyio
import pytest

from benchwarmers_mcp.cli.doctor import doctor
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import Database, modes
from tests.kits import cli as kit
from tests.kits.cli import Bench, ok

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX modes")
bench, served, bench_with_models = kit.bench, kit.served, kit.bench_with_models


def make_store(path: Path) -> None:
    async def made() -> None:
        async with Database(path):
            pass

    anyio.run(made)


def run_fixes(found: list[modes.Loose]) -> None:
    for loose in found:  # the command as printed, through a shell, as a person would paste it
        subprocess.run(["sh", "-c", loose.fix], check=True)


def run_printed(text: str) -> None:
    for line in text.splitlines():  # what it says to run, run as printed
        if "make it private with: " in line:
            subprocess.run(["sh", "-c", line.split("make it private with: ", 1)[1]], check=True)


def test_loose_modes_are_found_with_their_chmod_and_fixed_by_it(tmp_path: Path) -> None:
    home = tmp_path / "my data"  # a space: the command quotes the path
    home.mkdir()
    db = home / "benchwarmers.db"
    make_store(db)
    home.chmod(0o755)
    db.chmod(0o644)
    found = modes.loose(home, db)
    assert [(f.what, f.mode, f.fix) for f in found] == [
        ("data folder", 0o755, f"chmod 700 '{home}'"), ("database file", 0o644, f"chmod 600 '{db}'")]
    assert found[0].sentence() == (f"the data folder {home} is 0755: others on this machine can read every answer"
                                   f" in it; make it private with: chmod 700 '{home}'")
    run_fixes(found)
    assert modes.loose(home, db) == []
    assert (home.stat().st_mode & 0o777, db.stat().st_mode & 0o777) == (0o700, 0o600)


def test_only_group_and_other_bits_count_and_every_store_file_is_looked_at(tmp_path: Path) -> None:
    home = tmp_path / "data"
    home.mkdir()
    home.chmod(0o700)
    db = home / "benchwarmers.db"
    make_store(db)
    db.chmod(0o400)
    wal = home / "benchwarmers.db-wal"
    wal.write_bytes(b"")
    wal.chmod(0o640)  # group may read
    home.chmod(0o500)  # no write bit: still private
    try:
        assert [(f.path, f.mode) for f in modes.loose(home, db)] == [(wal, 0o640)]
        assert modes.loose(home, None) == []  # PostgreSQL: its files are the database server's
        assert modes.loose_for(home, "postgresql://bench:pw@db/bw") == []
        assert modes.loose(tmp_path / "not-made-yet", tmp_path / "not-made-yet" / "benchwarmers.db") == []
    finally:
        home.chmod(0o700)


def test_bench_status_reports_a_loose_data_folder_and_store(bench_with_models: str, settings: Settings,
                                                            bench: Bench) -> None:
    settings.home.chmod(0o755)
    settings.db_path.chmod(0o644)
    status = ok(bench(bench_with_models, "status"))
    assert f"the data folder {settings.home} is 0755: others on this machine can read every answer" in status.stderr
    assert f"make it private with: chmod 700 {settings.home}\n" in status.stderr
    assert f"the database file {settings.db_path} is 0644" in status.stderr
    assert f"make it private with: chmod 600 {settings.db_path}\n" in status.stderr
    run_printed(status.stderr)
    assert settings.home.stat().st_mode & 0o777 == 0o700
    assert [path.stat().st_mode & 0o077 for path in modes.store_files(settings.db_path) if path.exists()] == [0, 0, 0]
    status = ok(bench(bench_with_models, "status"))
    assert "others on this machine" not in status.stderr
    assert f"data folder    {settings.home}" in status.stdout


def test_doctor_reports_loose_modes_without_a_server(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home = tmp_path / "data"
    home.mkdir()
    db = home / "benchwarmers.db"
    make_store(db)
    home.chmod(0o755)
    db.chmod(0o604)
    settings = Settings.from_env({}, home=home, config_dir=tmp_path / "config")
    assert doctor(None, False, settings) == 0  # the store is whole: the modes alone are no failure
    out = capsys.readouterr().out
    assert f"the data folder {home} is 0755" in out and f"chmod 700 {home}" in out
    assert f"the database file {db} is 0604" in out and f"chmod 600 {db}" in out
    assert out.startswith(f"{db} (") and ": whole" in out.splitlines()[0]  # the examination first, as before
    assert out.rstrip().endswith("its modes aside (above), nothing to do")
    run_printed(out)
    assert doctor(None, False, settings) == 0
    assert "others on this machine" not in capsys.readouterr().out
    outside = tmp_path / "elsewhere.db"  # a file named: only its modes, not the data folder's
    make_store(outside)
    outside.chmod(0o644)
    home.chmod(0o755)
    assert doctor(str(outside), False, settings) == 0
    out = capsys.readouterr().out
    assert f"the database file {outside} is 0644" in out and "data folder" not in out
