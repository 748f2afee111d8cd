"""Shared set-up for the MCP tests (no tests here): a seeded bench, a progress recorder, the checks
every ``ask`` result must pass, the official ``mcp`` client on the test's loopback, and the stdio
launcher's parameters."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

from benchwarmers_mcp.settings import Settings
from tests.kits.loopback import Loopback
from tests.kits.seed import seed_async
from tests.kits.store import url_for

TOOLS = {"list_collections", "ask", "verdict", "pending_verdicts"}


async def seed_bench_async(home: Path) -> None:
    """Simulated models: ``core`` (two members, two explorers) and ``shaky`` (a member that fails)."""
    await seed_async(home, base_url=None, api="simulated", endpoint="sim",
                     served={"sage": "sage?latency=0.2", "quill": "quill?latency=0.3", "lark": "lark",
                             "ferret": "ferret"},
                     collections={"core": ["sage", "quill"]})
    await seed_async(home, base_url=None, api="simulated", endpoint="sim", served={"mole": "mole?fail=500"},
                     collections={"shaky": ["mole", "sage"]}, ad_hoc=True)


def seed_bench(home: Path) -> None:
    anyio.run(seed_bench_async, home)


def benchwarmers_script() -> str:
    """The installed console script, next to this Python."""
    return str(Path(sys.executable).parent / "benchwarmers")


def stdio(url: str, **env: str) -> StdioServerParameters:
    """``benchwarmers mcp`` (the stdio launcher, a subprocess) forwarding to the server at ``url``."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("BENCHWARMERS_", "BENCH_"))}
    return StdioServerParameters(command=benchwarmers_script(), args=["mcp"],
                                 env={**clean, "BENCHWARMERS_URL": url, **env})


@asynccontextmanager
async def mcp_client(net: Loopback, url: str, *, mode: str = "auto", headers: dict[str, str] | None = None,
                     timeout: httpx2.Timeout | None = None) -> AsyncIterator[Client]:
    """The official client over streamable HTTP to ``url`` on ``net``, with the SDK's own default
    timeouts unless ``timeout`` is given (``Client(url)`` would make the same client itself)."""
    timeout = timeout or httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT)
    async with net.aclient2(headers=headers, timeout=timeout) as http, \
            Client(streamable_http_client(url, http_client=http), mode=mode) as client:  # type: ignore[arg-type]
        yield client


class Seen:
    """A progress callback that keeps what it was told."""

    def __init__(self) -> None:
        self.events: list[tuple[float, float | None, str | None]] = []

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.events.append((progress, total, message))

    @property
    def values(self) -> list[float]:
        return [e[0] for e in self.events]

    @property
    def messages(self) -> list[str]:
        return [e[2] or "" for e in self.events]


def summary_of(result: Any) -> dict[str, Any]:
    """The JSON block of an ``ask`` result's second text item (after its one-line instruction)."""
    note, _, block = result.content[1].text.partition("\n")
    assert "verdict" in note and "Name every seat" in note
    return json.loads(block)


def assert_panel(result: Any, seen: Seen, collection: str = "bench/core") -> dict[str, Any]:
    assert not result.is_error, result.content[0].text
    content = result.content[0].text
    summary = summary_of(result)
    assert summary["collection"] == collection
    assert content.startswith(f"Bench {collection} {summary['panel']}")
    total = len(summary["seats"])
    for seat in summary["seats"]:
        assert f"`{seat['call']}`" in content
        assert seat["call"].startswith(summary["panel"] + ".")
        assert "answer" not in seat  # every answer is already in the content
    assert seen.values == sorted(set(seen.values)), "progress must only ever grow"
    assert seen.values[-1] == total
    assert {e[1] for e in seen.events} == {float(total)}
    assert f"1 of {total} seats answered" in seen.messages
    assert f"{total} of {total} seats answered" in seen.messages
    return summary


async def tools_of(client: Client) -> dict[str, Any]:
    return {t.name: t for t in (await client.list_tools()).tools}


# ---- pending verdicts: the Stop hook's transcripts and reminders ---------------------------------

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


# ---- fixtures (import them into a test module to use them) ---------------------------------------

@pytest.fixture
def settings(home: Path) -> Settings:
    """Keep-alives (MCP progress) every 0.5 s."""
    return Settings.from_env({}, home=home, config_dir=home.parent / "config", keepalive=0.5,
                             database_url=url_for(home))


@pytest.fixture
def base(home: Path, request: pytest.FixtureRequest) -> str:
    """The seeded bench behind the gateway (in-process, or a real server under tests/e2e/)."""
    seed_bench(home)
    return str(request.getfixturevalue("gateway"))
