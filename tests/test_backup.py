"""Issue 36.1: ``benchwarmers backup`` takes a consistent copy while panels are being written, and
the copy opens as a valid store holding every verdict acknowledged before it began;
``benchwarmers restore`` refuses while a server holds the store and says what it restored; the
scheduler's ``backup`` job keeps the last ``BENCH_BACKUP_KEEP``."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import anyio
import httpx
import pytest

from benchwarmers_mcp import backups
from benchwarmers_mcp.cli.main import main
from benchwarmers_mcp.context import Context
from benchwarmers_mcp.scheduler import JOBS
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import Database, verdicts
from benchwarmers_mcp.store import export as export_store
from tests.kits.gateway import openai_sdk, serve_gateway
from tests.kits.health import ManualClock
from tests.kits.loopback import Loopback
from tests.kits.seed import seed


@pytest.fixture
def cli_env(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """The CLI's environment: the test's data and config folders."""
    monkeypatch.setenv("BENCHWARMERS_HOME", str(settings.home))
    monkeypatch.setenv("BENCHWARMERS_CONFIG", str(settings.config_dir))
    for name in ("BENCHWARMERS_DATABASE_URL", "BENCH_BACKUP_DIR", "BENCH_BACKUP_KEEP"):
        monkeypatch.delenv(name, raising=False)
    return settings


@pytest.fixture
def bench(home: Path, upstream: str) -> Path:
    seed(home, base_url=upstream, served={"fast": "fast", "medium": "medium"},
         collections={"core": ["fast", "medium"]})
    return home


class Load:
    """Panels asked and their first seat judged, one after another in a thread, until stopped;
    ``acked`` holds each call whose verdict the server acknowledged (a 200)."""

    def __init__(self, net: Loopback, base: str) -> None:
        self.net, self.base = net, base
        self.acked: list[str] = []
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.progress = threading.Condition(self.lock)
        self.errors: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            client = openai_sdk(self.net, self.base)
            with self.net.client(base_url=self.base, timeout=60) as http:
                while not self.stop.is_set():
                    reply = client.chat.completions.create(model="bench/core",
                                                           messages=[{"role": "user", "content": "review"}])
                    call = reply.model_extra["bench"]["seats"][0]["call"]
                    answer = http.post("/bench/verdict", json={"call": call, "useful": True})
                    assert answer.status_code == 200, answer.text
                    with self.progress:
                        self.acked.append(call)
                        self.progress.notify_all()
        except BaseException as e:  # said by the test
            self.errors.append(e)
            with self.progress:
                self.progress.notify_all()

    def wait_for(self, count: int) -> list[str]:
        """Until at least ``count`` verdicts are acknowledged; those acknowledged by then."""
        with self.progress:
            self.progress.wait_for(lambda: len(self.acked) >= count or bool(self.errors))
            assert not self.errors, self.errors
            return list(self.acked)

    def __enter__(self) -> Load:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


async def _verdict_calls(path: Path) -> set[str]:
    async with Database(path) as db:
        found = {c for c in [row["call"] async for row in export_store.rows(db, export_store.BY_TABLE["verdicts"])]}
        for call in found:
            assert await verdicts.latest(db, call) is not None
        return found


def test_a_backup_taken_under_load_holds_every_acknowledged_verdict(
        bench: Path, cli_env: Settings, net: Loopback, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = serve_gateway(net, cli_env)
    target = tmp_path / "copy.db"
    with Load(net, base) as load:
        before = load.wait_for(3)
        assert main(["backup", str(target)]) == 0
        load.wait_for(len(before) + 3)  # the load went on through the backup and after it
    assert f"written: {target}" in capsys.readouterr().err
    conn = sqlite3.connect(target)
    assert conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"  # one file, no -wal beside it
    conn.close()
    assert not Path(str(target) + "-wal").exists() and not Path(str(target) + ".partial").exists()
    in_copy = anyio.run(_verdict_calls, target)
    assert set(before) <= in_copy, "every verdict acknowledged before the backup is in it"


def test_restore_refuses_while_a_server_holds_the_store_and_says_what_it_restored(
        bench: Path, cli_env: Settings, net: Loopback, http: httpx.Client, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    base = serve_gateway(net, cli_env)
    reply = openai_sdk(net, base).chat.completions.create(model="bench/core",
                                                          messages=[{"role": "user", "content": "one"}])
    call = reply.model_extra["bench"]["seats"][0]["call"]
    assert http.post(base + "/bench/verdict", json={"call": call, "useful": False}).status_code == 200
    assert main(["backup", str(tmp_path)]) == 0  # a folder: a new name in it
    (copy,) = tmp_path.glob("benchwarmers-*.db")
    openai_sdk(net, base).chat.completions.create(model="bench/core", messages=[{"role": "user", "content": "two"}])
    capsys.readouterr()

    assert main(["restore", str(copy)]) == 1
    assert "a server holds this store" in capsys.readouterr().err
    net.stop(base)

    assert main(["restore", str(tmp_path / "nothing.db")]) == 1
    assert "there is no backup" in capsys.readouterr().err
    bad = tmp_path / "bad.db"
    bad.write_text("not a database")
    assert main(["restore", str(bad)]) == 1
    assert "not a SQLite database" in capsys.readouterr().err

    assert main(["restore", str(copy)]) == 0
    said = capsys.readouterr().err
    assert said.startswith(f"restored {copy} into sqlite {cli_env.db_path}: ")
    assert "1 panels" in said and "2 seats" in said and "1 verdicts" in said, said
    assert anyio.run(_verdict_calls, cli_env.db_path) == {call}


@pytest.fixture
async def ctx(settings: Settings) -> Iterator[Context]:
    from benchwarmers_mcp.app import make_client
    from benchwarmers_mcp.upstream.caller import ModelCaller
    from benchwarmers_mcp.upstream.keys import KeyStore

    async with Database(settings.store_target) as db, make_client(settings) as client, \
            anyio.create_task_group() as tg:
        keys = KeyStore(settings.config_dir, {})
        yield Context(replace(settings, backup_keep=2), db, keys, client, ModelCaller(db, keys, client), tg,
                      clock=ManualClock())
        tg.cancel_scope.cancel()


@pytest.mark.anyio
async def test_the_scheduled_backup_keeps_the_last_few(ctx: Context) -> None:
    assert "backup" in JOBS and JOBS["backup"].resolve() is backups.scheduled
    clock = ctx.clock
    assert isinstance(clock, ManualClock)
    made = []
    for _ in range(4):
        done = await backups.scheduled(ctx)
        made.append(Path(done["backup"]))
        await clock.advance(86400)
    kept = sorted(p.name for p in backups.folder_of(ctx.settings).iterdir())
    assert kept == sorted(p.name for p in made[-2:])
    assert done["removed"] == [made[1].name] and done["keep"] == 2
    off = replace(ctx, settings=replace(ctx.settings, backup_keep=0))
    assert (await backups.scheduled(off))["backup"] is None


def test_the_backup_settings_are_read_by_the_one_parser(tmp_path: Path) -> None:
    from benchwarmers_mcp.settings import BadSettings

    read = Settings.from_env({"BENCH_BACKUP_KEEP": "3", "BENCH_BACKUP_DIR": str(tmp_path)}, home=tmp_path)
    assert (read.backup_keep, read.backup_dir) == (3, tmp_path)
    with pytest.raises(BadSettings, match="BENCH_BACKUP_KEEP must be a whole number"):
        Settings.from_env({"BENCH_BACKUP_KEEP": "-1"}, home=tmp_path)


@pytest.mark.parametrize("store_backend", ["postgresql"], indirect=True)
def test_on_postgresql_a_backup_is_the_export_and_restore_reads_it_back(
        bench: Path, cli_env: Settings, net: Loopback, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_env.database_url
    monkeypatch.setenv("BENCHWARMERS_DATABASE_URL", cli_env.database_url)
    base = serve_gateway(net, cli_env)
    openai_sdk(net, base).chat.completions.create(model="bench/core", messages=[{"role": "user", "content": "one"}])
    assert main(["backup", str(tmp_path)]) == 0
    said = capsys.readouterr().err
    (copy,) = tmp_path.glob("benchwarmers-*.jsonl")
    assert f"written: {copy}" in said and "postgresql" in said
    assert copy.read_text(encoding="utf-8").startswith('{"format": "benchwarmers-export"')
    assert main(["restore", str(copy)]) == 1
    assert "a server holds this store" in capsys.readouterr().err
    net.stop(base)
    assert main(["restore", str(copy)]) == 0
    said = capsys.readouterr().err
    assert "1 panels" in said and "2 seats" in said, said
