"""The store's one interface on both backends (SQLite in the data folder, PostgreSQL by URL): one
list of migrations, a write acknowledged only after its commit and seen at once by another
process's store, all-or-nothing transactions (an exception or a cancellation leaves nothing),
writers of two stores on one database taking turns (a read-then-write never races), times kept to
the microsecond, a reader that sees only commits, and a password in the URL never shown."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import Database, endpoints, keys, ledger, models
from benchwarmers_mcp.store import events as event_store
from benchwarmers_mcp.store import limits as limit_store
from benchwarmers_mcp.store.db import StoreUnavailable, describe_target, mask_url
from benchwarmers_mcp.store.endpoints import Endpoint
from benchwarmers_mcp.store.migrations import MIGRATIONS, apply_migrations
from benchwarmers_mcp.store.models import ModelRecord
from benchwarmers_mcp.store.postgres import rewrite
from tests.kits.servers import free_port
from tests.kits.store import store_of

pytestmark = pytest.mark.anyio
SECRET = "s3cret-Pa55word"


def test_placeholders_are_numbered_outside_quoted_text() -> None:
    assert rewrite("SELECT a FROM t WHERE b = ? AND c IN (?, ?)") == "SELECT a FROM t WHERE b = $1 AND c IN ($2, $3)"
    assert rewrite("SELECT '?', \"a?\" FROM t WHERE x = ? AND y = 'it''s ?'") == \
        "SELECT '?', \"a?\" FROM t WHERE x = $1 AND y = 'it''s ?'"
    assert rewrite("SELECT 1") == "SELECT 1"


def test_a_password_in_the_url_is_never_shown() -> None:
    url = f"postgresql://bench:{SECRET}@db.internal:6543/bw?sslmode=require&password={SECRET}"
    masked = mask_url(url)
    assert SECRET not in masked and masked.startswith("postgresql://bench:***@db.internal:6543/bw")
    where = describe_target(url)
    assert SECRET not in repr(where)
    assert (where["backend"], where["host"], where["port"], where["database"], where["user"]) == \
        ("postgresql", "db.internal", 6543, "bw", "bench")
    assert describe_target(Path("/data/benchwarmers.db")) == {"backend": "sqlite", "path": "/data/benchwarmers.db"}
    settings = Settings.from_env({"BENCHWARMERS_DATABASE_URL": url}, home=Path("/nowhere"))
    assert settings.store_target == url and SECRET not in repr(settings)
    with pytest.raises(StoreUnavailable) as caught:
        Database(f"mysql://root:{SECRET}@host/db")
    assert SECRET not in caught.value.message and "postgresql://" in caught.value.message


async def test_a_server_that_does_not_answer_is_a_503_without_the_password() -> None:
    db = Database(f"postgresql://bench:{SECRET}@127.0.0.1:{free_port()}/bw")
    with pytest.raises(StoreUnavailable) as caught:
        await db.open()
    assert caught.value.status == 503
    assert SECRET not in caught.value.message and "bench:***@127.0.0.1" in caught.value.message
    assert caught.value.__cause__ is None  # the driver's own error, which may repeat the URL, is not chained


async def test_the_one_list_of_migrations_runs_once(home: Path, store_backend: str) -> None:
    names = [name for name, _ in MIGRATIONS]
    assert len(names) == len(set(names))
    async with store_of(home) as db:
        assert db.dialect == store_backend and db.backend.lower().startswith(store_backend)
        async with db.transaction() as tx:
            assert await apply_migrations(tx) == []
    async with store_of(home) as again, again.transaction() as tx:
        assert await apply_migrations(tx) == []


async def test_a_write_is_seen_by_another_store_the_moment_it_returns(home: Path) -> None:
    async with store_of(home) as one, store_of(home) as two:
        await endpoints.add(one, Endpoint("up", "http://127.0.0.1:9/v1"))
        assert [e.name for e in await endpoints.list_all(two)] == ["up"]
        async with one.transaction() as tx:
            await limit_store.raise_alert(tx, "limit", "up", "first")
        assert [a["message"] for a in await limit_store.open_alerts(two)] == ["first"]


async def test_a_transaction_commits_whole_or_leaves_nothing(home: Path) -> None:
    async with store_of(home) as db:
        with pytest.raises(RuntimeError, match="half way"):
            async with db.transaction() as tx:
                await limit_store.raise_alert(tx, "limit", "a", "never kept")
                await limit_store.pause(tx, "a", time.time() + 60, "never kept")
                raise RuntimeError("half way")
        assert await limit_store.open_alerts(db) == [] and await limit_store.pauses(db, time.time()) == {}

        started = anyio.Event()
        async with anyio.create_task_group() as tg:
            async def cancelled_mid_way() -> None:
                async with db.transaction() as tx:
                    await limit_store.raise_alert(tx, "limit", "b", "never kept either")
                    started.set()
                    await anyio.sleep_forever()

            tg.start_soon(cancelled_mid_way)
            await started.wait()
            tg.cancel_scope.cancel()
        assert await limit_store.open_alerts(db) == []

        async with db.transaction() as tx:  # the writer is free again, and a whole one commits
            await limit_store.raise_alert(tx, "limit", "c", "kept")
            await limit_store.pause(tx, "c", time.time() + 60, "kept")
        assert [a["subject"] for a in await limit_store.open_alerts(db)] == ["c"]
        assert list(await limit_store.pauses(db, time.time())) == ["c"]


async def test_a_record_commits_whole_when_its_task_is_cancelled(home: Path) -> None:
    """``Database.record`` (a call's usage row, a seat, a route turn) is written whole even when its
    task was cancelled before it or is cancelled while it waits its turn behind another writer;
    the cancellation reaches the task afterwards, at its next checkpoint."""
    async with store_of(home) as db:
        went_on = False
        with anyio.CancelScope() as scope:
            scope.cancel()
            await ledger.append(db, _usage("early"))
            went_on = True
            await anyio.lowlevel.checkpoint()
            pytest.fail("the cancellation never came")
        assert went_on and scope.cancelled_caught
        assert "early" in await ledger.totals(db), "written whole, though cancelled before it began"

        holding, waiting = anyio.Event(), anyio.Event()
        async with anyio.create_task_group() as tg:
            async def hold_the_writer() -> None:
                async with db.transaction() as tx:
                    await limit_store.raise_alert(tx, "limit", "held", "the writer is busy")
                    holding.set()
                    await waiting.wait()
                    await anyio.sleep(0.05)

            async def record_behind_it() -> None:
                with anyio.CancelScope() as mine:
                    waiting.set()
                    mine.cancel()  # cancelled while it waits its turn
                    await ledger.append(db, _usage("behind"))
                    await anyio.lowlevel.checkpoint()

            tg.start_soon(hold_the_writer)
            await holding.wait()
            tg.start_soon(record_behind_it)
        assert "behind" in await ledger.totals(db), "written once its turn came, though cancelled while it waited"


def _usage(connection: str) -> ledger.UsageRow:
    return ledger.UsageRow(alias="m", connection=connection, endpoint="e", served="m", status="ok", t=time.time())


async def test_writers_of_two_stores_take_turns_so_a_key_admits_exactly_its_rpm(home: Path) -> None:
    rpm, tries = 7, 40
    async with store_of(home) as one, store_of(home) as two:
        key = keys.GatewayKey("shared", "0" * 64, "abcd", time.time(), rpm=rpm, last_used=time.time())
        assert await keys.add(one, key)
        admitted: list[bool] = []

        async def attempt(db: Database) -> None:
            admitted.append(await keys.admit(db, key, time.time()) is None)

        async with anyio.create_task_group() as tg:
            for n in range(tries):
                tg.start_soon(attempt, one if n % 2 else two)
    assert admitted.count(True) == rpm and len(admitted) == tries


async def test_while_one_store_writes_a_writer_of_another_waits(home: Path) -> None:
    async with store_of(home) as one, store_of(home) as two:
        order: list[str] = []
        async with anyio.create_task_group() as tg, one.transaction() as tx:
            order.append("one begins")

            async def second() -> None:
                async with two.transaction() as other:
                    order.append("two begins")
                    await limit_store.raise_alert(other, "limit", "two", "after one")

            tg.start_soon(second)
            for _ in range(20):  # round trips of the first writer: time enough for the second to start
                await limit_store.limits_for(tx, "one", None)
            await limit_store.raise_alert(tx, "limit", "one", "first")
            order.append("one commits")
        assert order == ["one begins", "one commits", "two begins"]
        assert [a["subject"] for a in await limit_store.open_alerts(two)] == ["one", "two"]


async def test_times_keep_every_microsecond(home: Path) -> None:
    at = 1_764_590_412.123456  # in a 4-byte REAL this would be off by about a minute
    async with store_of(home) as db:
        await endpoints.add(db, Endpoint("up", "http://127.0.0.1:9/v1"))
        await models.register(db, ModelRecord("m", "m", "up", "m"))
        await models.set_last_used(db, "m", at)
        assert (await models.get(db, "m")).last_used == at


async def test_the_reader_sees_only_what_is_committed(home: Path) -> None:
    async with store_of(home) as db, db.reader() as reader:
        start = await event_store.head(reader)
        inside = anyio.Event()
        release = anyio.Event()

        async def write() -> None:
            async with db.transaction() as tx:
                await limit_store.raise_alert(tx, "limit", "up", "an alert")
                inside.set()
                await release.wait()

        async with anyio.create_task_group() as tg:
            tg.start_soon(write)
            await inside.wait()
            assert await event_store.after(reader, start) == []  # not committed yet
            release.set()
        [event] = await event_store.after(reader, start)
        assert (event.kind, event.subject, event.ref) == ("alert", "up", "limit")


async def test_the_reader_takes_reads_that_come_at_once(home: Path) -> None:
    """The live feed's poll and a new subscriber's ``head()`` can read at the same moment: each
    gets its answer (one asyncpg connection refuses a second operation under way)."""
    async with store_of(home) as db, db.reader() as reader:
        async with db.transaction() as tx:
            await limit_store.raise_alert(tx, "limit", "up", "an alert")
        heads: list[int] = []
        found: list[int] = []

        async def poll() -> None:
            found.append(len(await event_store.after(reader, 0)))

        async def subscribe() -> None:
            heads.append(await event_store.head(reader))

        async with anyio.create_task_group() as tg:
            for _ in range(10):
                tg.start_soon(poll)
                tg.start_soon(subscribe)
        assert len(found) == 10 and len(set(found)) == 1 and found[0] >= 1
        assert len(heads) == 10 and len(set(heads)) == 1


async def test_a_data_folder_with_a_database_url_opens_that_database(settings: Settings, store_backend: str) -> None:
    async with Database(settings.store_target) as db:
        assert db.where["backend"] == store_backend
        await endpoints.add(db, Endpoint("up", "http://127.0.0.1:9/v1"))
    sqlite_only = replace(settings, database_url=None)
    async with Database(sqlite_only.store_target) as local:
        expected = ["up"] if store_backend == "sqlite" else []
        assert [e.name for e in await endpoints.list_all(local)] == expected


def test_init_on_a_database_that_does_not_answer_is_one_line_without_the_password(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from benchwarmers_mcp.cli.server import init

    url = f"postgresql://bench:{SECRET}@127.0.0.1:{free_port()}/bw"
    settings = Settings.from_env({"BENCHWARMERS_DATABASE_URL": url}, home=tmp_path / "data",
                                 config_dir=tmp_path / "config")
    assert init(None, settings) == 1
    err = capsys.readouterr().err
    assert SECRET not in err and "bench:***@127.0.0.1" in err and len(err.strip().splitlines()) == 1
