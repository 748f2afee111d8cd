"""``pending_verdicts`` for the Stop hook, on a real Claude Code style transcript (``.jsonl``) that
holds the panel call ids: it reminds once per seat per session, then is silent; it is silent when
the hook is already active or the transcript is unreadable; and the reminded set lives in the store,
so the stdio launcher and a restarted server agree with it."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from benchwarmers_mcp.app import create_app
from benchwarmers_mcp.settings import Settings
from tests.kits.servers import free_port, serve_in_thread
from tests.test_mcp_http import seed_bench, seed_bench_async, summary_of
from tests.test_mcp_stdio import stdio

pytestmark = pytest.mark.anyio

CALL = re.compile(r"p\d{8}-\d{6}-[0-9a-f]{4}\.[a-z]+\d*")


def write_transcript(path: Path, results: list[Any]) -> None:
    """A session transcript as Claude Code writes it: one JSON object a line, tool results inside."""
    lines: list[dict[str, Any]] = [
        {"type": "user", "sessionId": "s1", "message": {"role": "user", "content": "Review the cache change."}},
    ]
    for i, result in enumerate(results):
        lines.append({"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": f"toolu_{i}", "name": "mcp__plugin_benchwarmers_benchwarmers__ask",
             "input": {"collection": "core", "prompt": "..."}}]}})
        lines.append({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{i}",
             "content": [{"type": "text", "text": c.text} for c in result.content]}]}})
    lines.append({"type": "assistant", "message": {"role": "assistant", "content": [
        {"type": "text", "text": "Route turn r20261022-101500-ab12.t1 is not a panel seat."}]}})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def reminded(text: str) -> list[str]:
    if not text:
        return []
    output = json.loads(text)["hookSpecificOutput"]
    assert output["hookEventName"] == "Stop"
    assert "Send a verdict for each seat you judged" in output["additionalContext"]
    return CALL.findall(output["additionalContext"])


async def pending(client: Client, **args: Any) -> str:
    result = await client.call_tool("pending_verdicts", args)
    assert not result.is_error, result.content[0].text
    return result.content[0].text


def serve(settings: Settings):
    port = free_port()
    return serve_in_thread(create_app(replace(settings, port=port)), port)


async def test_reminds_once_per_seat_per_session(home: Path, settings: Settings, tmp_path: Path) -> None:
    await seed_bench_async(home)
    transcript = tmp_path / "session.jsonl"
    with serve(settings) as base:
        async with Client(base + "/mcp") as client:
            core = await client.call_tool("ask", {"collection": "core", "prompt": "Where can this go stale?"})
            shaky = await client.call_tool("ask", {"collection": "shaky", "prompt": "Review this."})
            judged = summary_of(core)["seats"][0]["call"]
            await client.call_tool("verdict", {"call": judged, "useful": True})
            write_transcript(transcript, [core, shaky])
            seats = summary_of(core)["seats"] + summary_of(shaky)["seats"]
            due = [s["call"] for s in seats if s["status"] == "ok" and s["call"] != judged]
            assert any(s["status"] == "error" for s in seats)

            first = await pending(client, session="s1", transcript=str(transcript), active=False)
            again = await pending(client, session="s1", transcript=str(transcript), active=False)
            active = await pending(client, session="s2", transcript=str(transcript), active=True)
            active_text = await pending(client, session="s2", transcript=str(transcript), active="true")
            other = await pending(client, session="s2", transcript=str(transcript), active=False)
        async with Client(stdio(base)) as launcher:
            via_stdio = await pending(launcher, session="s1", transcript=str(transcript), active=False)
            fresh = await pending(launcher, session="s3", transcript=str(transcript))
    assert reminded(first) == due
    assert again == ""
    assert active == "" and active_text == ""
    assert reminded(other) == due  # a hook that was active did not use the reminder up
    assert via_stdio == ""  # one reminded set, in the store, whichever way the hook comes
    assert reminded(fresh) == due


async def test_the_reminded_set_survives_a_restart(home: Path, settings: Settings, tmp_path: Path) -> None:
    await seed_bench_async(home)
    transcript = tmp_path / "session.jsonl"
    with serve(settings) as base:
        async with Client(base + "/mcp") as client:
            first_panel = await client.call_tool("ask", {"collection": "core", "prompt": "One."})
            write_transcript(transcript, [first_panel])
            first = await pending(client, session="s1", transcript=str(transcript))
    with serve(settings) as base:
        async with Client(base + "/v1/mcp", mode="legacy") as client:
            after_restart = await pending(client, session="s1", transcript=str(transcript))
            second_panel = await client.call_tool("ask", {"collection": "core", "prompt": "Two."})
            write_transcript(transcript, [first_panel, second_panel])
            only_new = await pending(client, session="s1", transcript=str(transcript))
    assert reminded(first) == [s["call"] for s in summary_of(first_panel)["seats"]]
    assert after_restart == ""
    assert reminded(only_new) == [s["call"] for s in summary_of(second_panel)["seats"]]


async def test_silent_when_it_cannot_or_need_not_read(base_seeded: str, tmp_path: Path) -> None:
    plain = tmp_path / "notes.txt"
    plain.write_text("p20261022-101500-ab12.member1")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    folder = tmp_path / "folder.jsonl"
    folder.mkdir()
    async with Client(base_seeded + "/mcp") as client:
        texts = [
            await pending(client, session="s1", transcript=str(tmp_path / "missing.jsonl")),
            await pending(client, session="s1", transcript=str(plain)),
            await pending(client, session="s1", transcript=str(empty)),
            await pending(client, session=5, transcript=str(empty)),
            await pending(client),
            await pending(client, session="s1", transcript=str(folder)),
        ]
    assert texts == [""] * len(texts)


@pytest.fixture
def base_seeded(home: Path, request: pytest.FixtureRequest) -> str:
    seed_bench(home)
    return request.getfixturevalue("gateway")
