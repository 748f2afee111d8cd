"""``pending_verdicts`` reached both ways at once: over HTTP on a real server and through the stdio
launcher (a subprocess) forwarding to it; one reminded set, in the store, whichever way the hook comes."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from mcp import Client

from benchwarmers_mcp.app import create_app
from benchwarmers_mcp.settings import Settings
from tests.kits.mcp import pending, reminded, seed_bench_async, stdio, summary_of, write_transcript
from tests.kits.servers import free_port, serve_in_thread

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


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
