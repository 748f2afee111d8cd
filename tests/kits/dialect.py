"""Shared set-up for the client-format tests (no tests here): simulated members, one of them slow
enough that every stream carries keep-alives, and a vision collection for image requests."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from benchwarmers_mcp.engine import report
from benchwarmers_mcp.errors import UpstreamFailure
from benchwarmers_mcp.settings import Settings
from tests.kits.seed import seed
from tests.kits.store import url_for

MEMBERS = ("sage", "quill", "lark")
# The smallest PNG header there is: enough for the gateway to sniff, never decoded by a simulated seat.
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 24).decode()
JPEG = base64.b64encode(b"\xff\xd8\xff\xe0" + b"\x00" * 24).decode()
PDF = base64.b64encode(b"%PDF-1.7\n" + b"\x00" * 24).decode()
QUESTION = "Where is the stale read in this cache?"
MID_STREAM = "upstream connection dropped mid-stream"


@pytest.fixture
def settings(home: Path) -> Settings:
    """Keep-alives every 0.05 s, so a 0.2 s seat puts several into every stream the SDKs read."""
    return Settings.from_env({}, home=home, config_dir=home.parent / "config", keepalive=0.05,
                             database_url=url_for(home))


@pytest.fixture
def panel(home: Path) -> Path:
    """``core``: three simulated members, one slow; ``eyes``: two members that can see (ad hoc, so
    they never sit as explorers on ``core``)."""
    seed(home, base_url=None, api="simulated", endpoint="sim",
         served={"sage": "sage", "quill": "quill?latency=0.1", "lark": "lark?latency=0.2"},
         collections={"core": list(MEMBERS)})
    seed(home, base_url=None, api="simulated", endpoint="sim-eyes", served={"owl": "owl", "hawk": "hawk?latency=0.1"},
         collections={"eyes": ["owl", "hawk"]}, vision=True, ad_hoc=True)
    return home


@pytest.fixture
def breaks_mid_stream(monkeypatch: pytest.MonkeyPatch) -> str:
    """The panel's footer fails after every seat answered, so after the 200: the stream must say so."""

    def footer(run):
        raise UpstreamFailure(MID_STREAM)

    monkeypatch.setattr(report, "footer", footer)
    return MID_STREAM


def assert_every_seat(text: str, aliases=MEMBERS) -> None:
    """Each seat's section and its simulated answer are in the text."""
    for alias in aliases:
        assert f"— {alias} (simulated)" in text, alias
        assert f"Simulated answer from {alias}" in text, alias
    assert "POST /bench/verdict" in text
