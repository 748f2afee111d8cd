"""Issue 36.3: ``benchwarmers store copy --to postgresql://...`` copies a SQLite store with a few
thousand panels into the CI's PostgreSQL: equal row counts and ratings on both sides, a copy
stopped halfway resumes to the same end, a database in use is refused, and the password is never
printed."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import anyio
import pytest

from benchwarmers_mcp import backups
from benchwarmers_mcp.cli.main import main
from benchwarmers_mcp.cli.server import store_label
from benchwarmers_mcp.context import Access
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import Database, calls, verdicts
from benchwarmers_mcp.store import copy as store_copy
from benchwarmers_mcp.store import export as export_store
from benchwarmers_mcp.store.calls import PanelRecord, SeatRecord
from benchwarmers_mcp.store.verdicts import Verdict
from tests.kits import postgres as pg_kit
from tests.kits.seed import seed_async

PANELS = 2000
PASSWORD = "n0t-shown-anywhere"


@pytest.fixture
def target(postgres_cluster: pg_kit.Cluster) -> Iterator[str]:
    """An empty PostgreSQL database's URL, with a password in it (the test cluster trusts any)."""
    url = postgres_cluster.take()
    parts = urlsplit(url)
    yield urlunsplit(parts._replace(netloc=f"{parts.username}:{PASSWORD}@{parts.hostname}:{parts.port}"))
    postgres_cluster.give_back(url)


@pytest.fixture
def source(settings: Settings, home: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """A SQLite store with ``PANELS`` panels of three seats and a verdict on every other seat."""
    monkeypatch.setenv("BENCHWARMERS_HOME", str(home))
    monkeypatch.setenv("BENCHWARMERS_CONFIG", str(settings.config_dir))
    monkeypatch.delenv("BENCHWARMERS_DATABASE_URL", raising=False)

    async def fill() -> None:
        await seed_async(home, base_url=None, api="simulated", endpoint="simulated",
                         served={"sage": "simulated/sage", "quill": "simulated/quill", "moss": "simulated/moss"},
                         collections={"core": ["sage", "quill", "moss"]})
        async with Database(settings.store_target) as db:
            start = time.time() - 86400
            for i in range(PANELS):
                panel = f"p{i:05d}"
                await calls.create_panel(db, PanelRecord(panel, start + i, "bench/core", "review", "", "all",
                                                         "local", None, f"prompt {i}", []))
                for n, alias in enumerate(("sage", "quill", "moss")):
                    status = "ok" if (i + n) % 7 else "error"
                    await calls.record_seat(db, SeatRecord(f"{panel}.member{n + 1}", panel, f"member{n + 1}", alias,
                                                           alias, status, 1.5, f"answer {i}", "", 10, 20, start + i))
                    if status == "ok" and (i + n) % 2 == 0:
                        await verdicts.record(db, Verdict(f"{panel}.member{n + 1}", (i * n) % 3 != 0, "",
                                                          ("a real one",) if n == 0 else (), (), start + i + 1),
                                              access=Access.unscoped())

    anyio.run(fill)
    return settings


class Stop(Exception):
    pass


def test_a_copy_stopped_halfway_resumes_to_equal_counts_and_ratings(
        source: Settings, target: str, capsys: pytest.CaptureFixture[str]) -> None:
    batches = []

    def stop_in_the_seats(table: str, rows: int) -> None:
        batches.append(table)
        if table == "seats" and rows >= 2 * store_copy.BATCH:
            raise Stop  # as a kill would: the batches before it are committed, the rest not

    with pytest.raises(Stop):
        anyio.run(backups.copy_to, source, target, store_label(source), stop_in_the_seats)
    assert "panels" in batches and "verdicts" not in batches

    assert main(["store", "copy", "--to", target]) == 0
    said = capsys.readouterr().err
    assert PASSWORD not in said and "***" in said
    assert "(resumed)" in said and "every count equal" in said and "3 models' ratings equal" in said, said

    async def counted() -> dict[str, int]:
        async with Database(target) as db:
            return await export_store.counts(db)

    found = anyio.run(counted)
    assert found["panels"] == PANELS and found["seats"] == 3 * PANELS and found["verdicts"] > PANELS // 2

    assert main(["store", "copy", "--to", target]) == 0  # once more: nothing to add, still equal
    assert "every count equal" in capsys.readouterr().err
    assert anyio.run(counted) == found


def test_a_database_in_use_is_refused_and_the_password_never_shown(
        source: Settings, target: str, capsys: pytest.CaptureFixture[str]) -> None:
    async def in_use() -> None:
        async with Database(target) as db:
            await seed_async_into(db)

    async def seed_async_into(db: Database) -> None:
        from benchwarmers_mcp.store import endpoints
        from benchwarmers_mcp.store.endpoints import Endpoint

        await endpoints.add(db, Endpoint("theirs", "simulated://local", api="simulated", kind="simulated"))

    anyio.run(in_use)
    assert main(["store", "copy", "--to", target]) == 1
    said = capsys.readouterr().err
    assert "the destination is not empty" in said and PASSWORD not in said
    assert len(said.strip().splitlines()) == 1
    wrong = target.replace(f":{urlsplit(target).port}/", ":1/")  # nothing listens there
    assert main(["store", "copy", "--to", wrong]) == 1
    said = capsys.readouterr().err
    assert PASSWORD not in said and len(said.strip().splitlines()) == 1, said
    assert main(["store", "copy", "--to", "mysql://x/y"]) == 1
    assert "postgresql://" in capsys.readouterr().err
