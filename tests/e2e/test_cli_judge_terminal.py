"""``bench judge`` on a real terminal (a pseudo-terminal), the installed console script against a real
server: each key counts the moment it is typed, with no Enter, and keys typed before the inbox was
ready are kept. Through a pipe, and everything else of it, in-process: tests/test_cli_judge.py."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx
import pytest

from benchwarmers_mcp.store import verdicts
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.cli import on_terminal
from tests.kits.judging import ask, seat_calls, seed_judging
from tests.kits.store import store_of

pytestmark = pytest.mark.e2e


@pytest.fixture
def judging(home: Path, upstream: str, fake: FakeUpstream) -> Path:
    seed_judging(home, upstream, fake)
    return home


def test_on_a_terminal_each_key_counts_without_enter(judging: Path, gateway: str) -> None:
    with httpx.Client(timeout=60) as http:
        calls = seat_calls(ask(http, gateway))
    judged = on_terminal(gateway, "judge", answer="uxu")  # three keys, no Enter: the whole panel
    assert judged.returncode == 0, judged.stderr
    assert "judged 3 seats; 0 still owed" in judged.stdout

    async def latest() -> list[bool | None]:
        async with store_of(judging) as db:
            return [(await verdicts.latest(db, calls[a])).useful for a in ("alpha", "beta", "gamma")]  # type: ignore[union-attr]

    assert anyio.run(latest) == [True, False, True]
