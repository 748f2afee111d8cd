"""A damaged SQLite store (issue 31.8): refused at open with one sentence naming the file and what
to do, before anything reads it; a file exactly as a clean stop left it is not read again; the
doctor's examination, recovery and swap never write to the damaged file."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import anyio
import pytest

from benchwarmers_mcp.store import Database, integrity
from benchwarmers_mcp.store import collections as collection_store
from benchwarmers_mcp.store.db import StoreUnavailable
from tests.kits.damage import damage_middle, filled_store


@pytest.fixture(scope="module")
def whole(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("whole") / "benchwarmers.db"
    anyio.run(filled_store, path)
    return path


@pytest.fixture
def damaged(whole: Path, tmp_path: Path) -> Path:
    path = tmp_path / "data" / "benchwarmers.db"
    path.parent.mkdir()
    shutil.copyfile(whole, path)
    damage_middle(path)
    return path


async def _open(path: Path) -> None:
    async with Database(path) as db:
        await collection_store.get(db, "demo")


def test_a_store_damaged_in_the_middle_is_refused_at_open_and_left_as_it_was(damaged: Path) -> None:
    before = damaged.read_bytes()
    with pytest.raises(integrity.StoreDamaged) as caught:
        anyio.run(_open, damaged)
    message = caught.value.message
    assert isinstance(caught.value, StoreUnavailable) and caught.value.status == 503
    assert f"the database {damaged} is damaged" in message and "\n" not in message
    assert "restore it from a backup" in message and "`benchwarmers doctor`" in message
    assert damaged.read_bytes() == before


def test_a_whole_store_opens(whole: Path, tmp_path: Path) -> None:
    copy = tmp_path / "benchwarmers.db"
    shutil.copyfile(whole, copy)
    anyio.run(_open, copy)


class Refusing:
    """A connection that records what it is asked, and answers the quick check as damage would."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def execute(self, sql: str) -> Refusing:
        self.asked.append(sql)
        return self

    def fetchall(self) -> list[tuple[str]]:
        return [("*** in database main ***",), ("Page 12: btreeInitPage() returns error code 11",)]


def test_the_file_a_clean_stop_left_is_not_read_again_once(whole: Path, tmp_path: Path) -> None:
    path = tmp_path / "benchwarmers.db"
    shutil.copyfile(whole, path)
    assert integrity.mark_clean(path)
    conn = Refusing()
    integrity.check_at_open(conn, path)  # type: ignore[arg-type]
    assert conn.asked == []  # exactly as left: no check
    with pytest.raises(integrity.StoreDamaged, match="btreeInitPage"):
        integrity.check_at_open(conn, path)  # type: ignore[arg-type]
    assert conn.asked == ["PRAGMA quick_check"]  # the mark was good for one start


@pytest.mark.parametrize("change", ["touched", "rewritten", "log waiting"])
def test_a_file_changed_since_the_clean_stop_is_checked(whole: Path, tmp_path: Path, change: str) -> None:
    path = tmp_path / "benchwarmers.db"
    shutil.copyfile(whole, path)
    assert integrity.mark_clean(path)
    if change == "touched":
        os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000))
    elif change == "rewritten":  # a restore onto the same name: same size, same times given back
        st = path.stat()
        data = path.read_bytes()
        path.unlink()
        path.write_bytes(data)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    else:
        path.with_name(path.name + "-wal").write_bytes(b"\0" * 32)
    conn = Refusing()
    with pytest.raises(integrity.StoreDamaged):
        integrity.check_at_open(conn, path)  # type: ignore[arg-type]
    assert conn.asked == ["PRAGMA quick_check"]


def test_nothing_is_marked_while_a_log_waits(whole: Path, tmp_path: Path) -> None:
    path = tmp_path / "benchwarmers.db"
    shutil.copyfile(whole, path)
    path.with_name(path.name + "-wal").write_bytes(b"\0" * 32)
    assert not integrity.mark_clean(path)


def test_the_doctor_finds_the_damaged_tables_and_saves_the_rest(whole: Path, damaged: Path) -> None:
    before = damaged.read_bytes()
    clean = {t.name: t.rows for t in integrity.examine(whole).tables}
    assert integrity.examine(whole).healthy
    found = integrity.examine(damaged)
    assert not found.healthy and found.problem_count >= 1
    hurt = {t.name for t in found.tables if t.error}
    assert hurt and hurt <= set(clean)
    for t in found.tables:  # a table the damage missed reads whole; a damaged one lost some rows
        assert t.rows == clean[t.name] if t.name not in hurt else 0 <= t.rows < clean[t.name]

    into = damaged.with_name("recovered.db")
    recovery = integrity.recover(damaged, into)
    assert recovery.how == "copy"
    assert {t.name: t.rows for t in recovery.tables} == {t.name: t.rows for t in found.tables}
    assert sum(t.rows for t in recovery.tables) > sum(clean.values()) // 2
    assert integrity.examine(into).healthy
    anyio.run(_open, into)  # the product opens the copy: its schema and migrations are there
    assert damaged.read_bytes() == before

    kept = integrity.swap(damaged, into)
    assert kept.read_bytes() == before and kept.name.startswith("benchwarmers.db.damaged-")
    assert integrity.examine(damaged).healthy and not into.exists()


def test_a_whole_store_is_copied_by_vacuum(whole: Path, tmp_path: Path) -> None:
    into = tmp_path / "copy.db"
    assert integrity.recover(whole, into).how == "vacuum"
    assert {t.name: t.rows for t in integrity.examine(into).tables} == {
        t.name: t.rows for t in integrity.examine(whole).tables}


def test_a_file_that_is_not_a_database_is_named_so(tmp_path: Path) -> None:
    path = tmp_path / "benchwarmers.db"
    path.write_bytes(b"not a database " * 300)
    with pytest.raises(integrity.StoreDamaged, match="cannot open the database .* not a SQLite database"):
        anyio.run(_open, path)


async def _read_after_damage(path: Path) -> tuple[str, str | None, int]:
    async with Database(path) as db:
        for side in (db._writer, db._reader):  # what a long-running server's cache would have let go
            assert side is not None
            side.conn.execute("PRAGMA shrink_memory")
        damage_middle(path)
        with pytest.raises(integrity.StoreDamaged) as caught:
            await db.fetchall("SELECT sum(length(answer)) FROM seats")
        assert db._reader is not None and db._writer is not None
        return caught.value.message, db._reader.failure or db._writer.failure, db.error_count()


def test_damage_met_while_serving_is_the_same_sentence_as_at_open(whole: Path, tmp_path: Path) -> None:
    """A page damaged after the check at open (a disk going bad under a running server) is met by
    a read: the store's one 503 that names the file and what to do, never sqlite3's bare error
    (which a page would show as a failure with no way out), /health keeps it and /metrics counts it."""
    copy = tmp_path / "benchwarmers.db"
    shutil.copyfile(whole, copy)
    message, kept, counted = anyio.run(_read_after_damage, copy)
    assert message.startswith(f"the database {copy} is damaged (database disk image is malformed)")
    assert "`benchwarmers doctor`" in message and "restore it from a backup" in message
    assert kept == message
    assert counted == 1  # a store error like a full disk's (Database.error_count, the metrics' store errors)
