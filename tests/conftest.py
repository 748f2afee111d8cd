from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from benchwarmers_mcp.app import create_app
from benchwarmers_mcp.settings import Settings
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.servers import free_port, serve_in_thread


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
def upstream(fake: FakeUpstream) -> Iterator[str]:
    """The fake OpenAI-compatible upstream on a free port; yields its /v1 base URL."""
    with serve_in_thread(fake.app()) as base:
        yield base + "/v1"


@pytest.fixture
def gateway(settings: Settings) -> Iterator[str]:
    """A real Benchwarmers server (in a thread) on a free port, on the test's data folder."""
    port = free_port()
    with serve_in_thread(create_app(replace(settings, port=port)), port) as base:
        yield base
