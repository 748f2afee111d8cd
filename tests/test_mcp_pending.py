"""``pending_verdicts`` for the Stop hook, on a real Claude Code style transcript (``.jsonl``) that
holds the panel call ids: it reminds once per seat per session, then is silent; it is silent when
the hook is already active or the transcript is unreadable; and the reminded set lives in the store,
so a restarted server agrees with it (and the stdio launcher: tests/e2e/test_mcp_pending_stdio.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchwarmers_mcp.settings import Settings
from tests.kits.gateway import gateway_serving
from tests.kits.loopback import Loopback
from tests.kits.mcp import (
    mcp_client,
    pending,
    reminded,
    seed_bench,
    seed_bench_async,
    summary_of,
    write_transcript,
)

pytestmark = pytest.mark.anyio

async def test_the_reminded_set_survives_a_restart(home: Path, settings: Settings, tmp_path: Path,
                                                   net: Loopback) -> None:
    await seed_bench_async(home)
    transcript = tmp_path / "session.jsonl"
    with gateway_serving(net, settings) as base:
        async with mcp_client(net, base + "/mcp") as client:
            first_panel = await client.call_tool("ask", {"collection": "core", "prompt": "One."})
            write_transcript(transcript, [first_panel])
            first = await pending(client, session="s1", transcript=str(transcript))
    with gateway_serving(net, settings) as base:
        async with mcp_client(net, base + "/v1/mcp", mode="legacy") as client:
            after_restart = await pending(client, session="s1", transcript=str(transcript))
            second_panel = await client.call_tool("ask", {"collection": "core", "prompt": "Two."})
            write_transcript(transcript, [first_panel, second_panel])
            only_new = await pending(client, session="s1", transcript=str(transcript))
    assert reminded(first) == [s["call"] for s in summary_of(first_panel)["seats"]]
    assert after_restart == ""
    assert reminded(only_new) == [s["call"] for s in summary_of(second_panel)["seats"]]


async def test_silent_when_it_cannot_or_need_not_read(base_seeded: str, tmp_path: Path, net: Loopback) -> None:
    plain = tmp_path / "notes.txt"
    plain.write_text("p20261022-101500-ab12.member1")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    folder = tmp_path / "folder.jsonl"
    folder.mkdir()
    async with mcp_client(net, base_seeded + "/mcp") as client:
        texts = [
            await pending(client, session="s1", transcript=str(tmp_path / "missing.jsonl")),
            await pending(client, session="s1", transcript=str(plain)),
            await pending(client, session="s1", transcript=str(empty)),
            await pending(client, session=5, transcript=str(empty)),
            await pending(client, active=False),  # a hook's call with neither session nor transcript
            await pending(client, session="s1", transcript=str(folder)),
        ]
    assert texts == [""] * len(texts)


@pytest.fixture
def base_seeded(home: Path, request: pytest.FixtureRequest) -> str:
    seed_bench(home)
    return request.getfixturevalue("gateway")
