"""A PostgreSQL cluster for the tests, and a clean database in it for each test that asks.

``.ci/run`` starts a throwaway cluster (``.ci/postgres.sh up``) and exports its URL as
``BENCHWARMERS_TEST_DATABASE_URL`` with ``BENCHWARMERS_TEST_POSTGRES=required``: then the tests use
that cluster and a test fails (never skips) when it cannot reach it. Without the URL (a plain
``python -m pytest``), the first test that needs PostgreSQL runs the same script itself (it installs
Debian's ``postgresql`` when missing and run as root) and stops the cluster when the session ends;
a machine where it cannot fails those tests with the reason.

Each pytest process keeps its databases (``bw_<pid>_<n>``, fully migrated once) and hands a test
one that it has emptied (``TRUNCATE ... RESTART IDENTITY``): far cheaper than a new database per test.
They are dropped when the session ends.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import subprocess
from pathlib import Path

import asyncpg

from benchwarmers_mcp.store import Database

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / ".ci" / "postgres.sh"
URL_VAR = "BENCHWARMERS_TEST_DATABASE_URL"
REQUIRED_VAR = "BENCHWARMERS_TEST_POSTGRES"


class Cluster:
    """The cluster's superuser URL, our databases in it, and the ones free for the next test."""

    def __init__(self, admin_url: str, started: dict[str, str] | None = None) -> None:
        self.admin_url = admin_url
        self.started = started  # the script's exports when this process started the cluster
        self.made: list[str] = []
        self.free: list[str] = []
        self.in_use: set[str] = set()

    def url(self, name: str) -> str:
        return self.admin_url.rsplit("/", 1)[0] + "/" + name

    def take(self) -> str:
        """A clean, migrated database's URL for one test."""
        name = self.free.pop() if self.free else self._make()
        asyncio.run(_empty(self.url(name), self.admin_url, name))
        self.in_use.add(name)
        return self.url(name)

    def give_back(self, url: str) -> None:
        name = url.rsplit("/", 1)[1]
        if name in self.in_use:
            self.in_use.discard(name)
            self.free.append(name)

    def _make(self) -> str:
        name = f"bw_{os.getpid()}_{len(self.made) + 1}"
        asyncio.run(_create(self.admin_url, name, self.url(name)))
        self.made.append(name)
        return name

    def finish(self) -> None:
        if self.made:
            try:
                asyncio.run(_drop(self.admin_url, self.made))
            except (OSError, asyncpg.PostgresError):
                pass
        if self.started is not None:
            subprocess.run(["bash", str(SCRIPT), "down"], env={**os.environ, **self.started}, check=False,
                           stdin=subprocess.DEVNULL, capture_output=True)


async def _create(admin_url: str, name: str, url: str) -> None:
    conn = await asyncpg.connect(admin_url)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    async with Database(url):  # the migrations, once
        pass


async def _empty(url: str, admin_url: str, name: str) -> None:
    """Every table but ``migrations`` emptied and its ids restarted, in one round trip (``DELETE``
    is far cheaper than ``TRUNCATE`` on tables this small); a server a test left behind is cut off."""
    conn = await asyncpg.connect(url)
    try:
        tables = [r[0] for r in await conn.fetch(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename != 'migrations'")]
        sequences = [r[0] for r in await conn.fetch(
            "SELECT sequencename FROM pg_sequences WHERE schemaname = 'public'")]
        script = ["SET lock_timeout = '5s'", "SET session_replication_role = replica"]  # no FK checks, no triggers
        script += [f'DELETE FROM "{t}"' for t in tables]
        script += [f"SELECT setval('\"{q}\"', 1, false)" for q in sequences]
        try:
            await conn.execute("; ".join(script))
        except asyncpg.LockNotAvailableError:
            await _cut_off(admin_url, name)
            await conn.execute("; ".join(script))
    finally:
        await conn.close()


async def _cut_off(admin_url: str, name: str) -> None:
    admin = await asyncpg.connect(admin_url)
    try:
        await admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1"
                            " AND pid != pg_backend_pid()", name)
    finally:
        await admin.close()


async def _drop(admin_url: str, names: list[str]) -> None:
    conn = await asyncpg.connect(admin_url)
    try:
        for name in names:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


def _reachable(url: str) -> str | None:
    async def probe() -> None:
        conn = await asyncpg.connect(url, timeout=10)
        await conn.close()

    try:
        asyncio.run(probe())
        return None
    except (TimeoutError, OSError, asyncpg.PostgresError) as e:
        return f"{type(e).__name__}: {e}"


def _start() -> dict[str, str]:
    done = subprocess.run(["bash", str(SCRIPT), "up"], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"PostgreSQL is needed for these tests and .ci/postgres.sh up failed: {done.stderr[-2000:]}")
    words = shlex.split(done.stdout.strip().splitlines()[-1])
    assert words[0] == "export", done.stdout
    return dict(w.split("=", 1) for w in words[1:])


_cluster: Cluster | None = None


def cluster() -> Cluster:
    """The session's cluster: the exported one (required to answer), or one started here."""
    global _cluster
    if _cluster is not None:
        return _cluster
    url = os.environ.get(URL_VAR)
    if not url and os.environ.get(REQUIRED_VAR) == "required":
        raise RuntimeError(f"{REQUIRED_VAR}=required but {URL_VAR} is not set: run the tests through .ci/run")
    if url:
        problem = _reachable(url)
        if problem:
            raise RuntimeError(f"{URL_VAR} is set but PostgreSQL does not answer there: {problem}")
        _cluster = Cluster(url)
    else:
        started = _start()
        _cluster = Cluster(started[URL_VAR], started)
    return _cluster


def finish() -> None:
    """Drop this process's databases (and stop the cluster if it started one)."""
    global _cluster
    if _cluster is not None:
        _cluster.finish()
        _cluster = None


async def every_row(url: str) -> str:
    """Every row of every table of the database at ``url``, as PostgreSQL spells it in text: what a
    test searches for what must never be stored."""
    conn = await asyncpg.connect(url)
    try:
        tables = [r[0] for r in await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
        rows = [str(r[0]) for t in tables for r in await conn.fetch(f'SELECT t::text FROM "{t}" t')]
    finally:
        await conn.close()
    return "\n".join(rows)
