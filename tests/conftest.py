"""Fixtures every test may take. The gateway and the fake upstreams run in-process on the test's
loopback (``net``): no socket, no server thread per test. ``tests/e2e/conftest.py`` swaps
``upstream`` and ``gateway`` for real servers on free ports.

The store: a test runs on SQLite in its data folder. A test (or module, ``pytestmark``) marked
``backends`` runs twice, ``[sqlite]`` and ``[postgresql]``: for the second, its ``home`` (and so
``settings``, every kit that seeds or reads a data folder, and server processes started on it) is
bound to a clean PostgreSQL database (``tests/kits/postgres.py``). ``store_backend`` says which.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from benchwarmers_mcp.settings import Settings
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits import postgres as pg_kit
from tests.kits import store as store_kit
from tests.kits.gateway import serve_gateway
from tests.kits.loopback import Loopback

BACKENDS = ("sqlite", "postgresql")
# the store tests: every test in these files that takes a data folder (``home``, ``settings``...)
# runs on both backends, as if marked ``backends``
STORE_TESTS = frozenset({
    "test_store_backends.py", "test_replicas.py", "test_store_calls.py", "test_store_events.py",
    "test_seating.py", "test_route_ranking.py", "test_ledger.py", "test_limits.py", "test_limits_gateway.py",
    "test_security_keys.py", "test_route_sticky.py", "test_engine_outcome.py", "catalog/test_facts_store.py",
    "suite/test_mine.py", "suite/test_board.py", "e2e/test_limits_processes.py",
    "e2e/test_route_sticky_processes.py", "e2e/test_durability.py", "test_scheduler.py", "test_onboarding.py",
})


# ``-n auto`` (pyproject's addopts): the suite waits far more than it computes (servers and
# browsers starting, slow fake seats, rate windows, timeouts it checks), so two workers per core
# finish sooner than one: measured on 2 cores (load about 3), 4 workers ran it in 243-265 s, 2 in
# 487 s, one process in 1244 s. Past 8 a worker costs more than it saves: each one starts by
# collecting what it runs (the whole suite: ~16 s of CPU).
WORKERS_PER_CORE, MOST_WORKERS = 2, 8


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """Workers for the suite, or a folder of it; none (one process) when only test files are named,
    as when checking the tests one touched: there a worker's start costs more than it saves.
    ``-n N`` says otherwise."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist's own rule reads it
    named = [Path(config.invocation_params.dir, arg.split("::")[0]) for arg in config.args]
    if config.args_source == pytest.Config.ArgsSource.ARGS and named and all(p.is_file() for p in named):
        return 0
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(MOST_WORKERS, WORKERS_PER_CORE * cores))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "backends: run on SQLite and on PostgreSQL (the store_backend fixture)")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "store_backend" not in metafunc.fixturenames:
        return
    where = Path(str(metafunc.definition.path)).relative_to(Path(__file__).parent).as_posix()
    if metafunc.definition.get_closest_marker("backends") or where in STORE_TESTS:
        metafunc.parametrize("store_backend", BACKENDS, indirect=True)


@pytest.fixture
def store_backend(request: pytest.FixtureRequest) -> str:
    """``sqlite`` or ``postgresql``: the store this run of the test uses. ``sqlite`` unless marked,
    or unless ``BENCHWARMERS_TEST_STORE=postgresql`` puts every unmarked test on PostgreSQL."""
    default = os.environ.get("BENCHWARMERS_TEST_STORE", "sqlite")
    return str(getattr(request, "param", default))


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[pg_kit.Cluster]:
    try:
        yield pg_kit.cluster()
    finally:
        pg_kit.finish()


@pytest.fixture
def database_url(store_backend: str, request: pytest.FixtureRequest) -> Iterator[str | None]:
    """None on SQLite; on PostgreSQL, a clean migrated database of its own for this test."""
    if store_backend == "sqlite":
        yield None
        return
    cluster: pg_kit.Cluster = request.getfixturevalue("postgres_cluster")
    url = cluster.take()
    try:
        yield url
    finally:
        cluster.give_back(url)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def home(tmp_path: Path, database_url: str | None) -> Iterator[Path]:
    """The test's data folder, bound to its store (``tests/kits/store.py``)."""
    path = tmp_path / "data"
    path.mkdir()
    store_kit.bind(path, database_url)
    try:
        yield path
    finally:
        store_kit.bind(path, None)


@pytest.fixture
def settings(home: Path, database_url: str | None) -> Settings:
    return Settings.from_env({}, home=home, config_dir=home.parent / "config", database_url=database_url)


@pytest.fixture
def fake() -> FakeUpstream:
    return FakeUpstream()


@pytest.fixture
def net() -> Iterator[Loopback]:
    """The test's loopback: every app it serves, on one server loop, reached by its transports."""
    with Loopback() as loopback:
        yield loopback


@pytest.fixture
def upstream(fake: FakeUpstream, net: Loopback) -> str:
    """The fake OpenAI-compatible upstream on the loopback; its /v1 base URL."""
    return net.serve(fake.app()) + "/v1"


@pytest.fixture
def gateway(settings: Settings, net: Loopback) -> str:
    """Benchwarmers (``create_app`` with its lifespan) on the loopback, on the test's data folder."""
    return serve_gateway(net, settings)


@pytest.fixture
def api(gateway: str, net: Loopback) -> Iterator[httpx.Client]:
    """A client of the in-process gateway (the admin API, the dashboard's pages and routes)."""
    with net.client(base_url=gateway, timeout=60) as client:
        yield client


@pytest.fixture
def http(net: Loopback) -> Iterator[httpx.Client]:
    """A plain httpx client that reaches whatever the test serves on its loopback."""
    with net.client() as client:
        yield client
