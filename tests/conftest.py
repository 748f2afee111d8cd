"""Fixtures every test may take. The gateway and the fake upstreams run in-process on the test's
loopback (``net``): no socket, no server thread per test. ``tests/e2e/conftest.py`` swaps
``upstream`` and ``gateway`` for real servers on free ports."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from benchwarmers_mcp.settings import Settings
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.gateway import serve_gateway
from tests.kits.loopback import Loopback


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    path.mkdir()
    return path


@pytest.fixture
def settings(home: Path) -> Settings:
    return Settings.from_env({}, home=home, config_dir=home.parent / "config")


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
def http(net: Loopback) -> Iterator[httpx.Client]:
    """A plain httpx client that reaches whatever the test serves on its loopback."""
    with net.client() as client:
        yield client
