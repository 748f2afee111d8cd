"""A scoped gateway key reaches its own collections' calls only, over HTTP and MCP alike: a verdict on
another collection's call is refused 403, another collection's record is refused 403, and pending
verdicts leave another collection's calls out (never naming them). An MCP session belongs to the key
that opened it: another key, or none, cannot use its session id."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest

from benchwarmers_mcp.access import gateway_keys
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import Database, verdicts
from tests.kits.loopback import Loopback
from tests.kits.mcp import mcp_client, seed_bench, write_transcript
from tests.test_mcp_http import INITIALIZE, MCP_HEADERS

pytestmark = pytest.mark.anyio


@pytest.fixture
def settings(home: Path) -> Settings:
    return Settings.from_env({}, home=home, config_dir=home.parent / "config", require_keys=True)


@pytest.fixture
def keys(home: Path) -> dict[str, str]:
    """``core`` (a key scoped to bench/core), ``shaky`` (scoped to bench/shaky) and ``all`` (unscoped)."""
    seed_bench(home)

    async def make() -> dict[str, str]:
        async with Database(home / "benchwarmers.db") as db:
            return {name: (await gateway_keys.create(db, f"{name}-key", scope))[1]
                    for name, scope in (("core", ["core"]), ("shaky", ["shaky"]), ("all", None))}

    return anyio.run(make)


def auth(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def panel_calls(http: httpx.Client, base: str, secret: str, collection: str) -> list[str]:
    """Ask ``collection`` with ``secret``; the answered seats' call ids."""
    response = http.post(base + "/v1/chat/completions", headers=auth(secret), timeout=60, json={
        "model": f"bench/{collection}", "messages": [{"role": "user", "content": "Where can this go stale?"}]})
    assert response.status_code == 200, response.text
    return [s["call"] for s in response.json()["bench"]["seats"] if s["status"] in ("ok", "empty")]


def test_http_verdict_record_and_pending_hold_to_the_key_scope(keys: dict[str, str], gateway: str,
                                                                 home: Path, http: httpx.Client) -> None:
    shaky_calls = panel_calls(http, gateway, keys["shaky"], "shaky")
    core_calls = panel_calls(http, gateway, keys["core"], "core")
    assert shaky_calls and core_calls

    # a verdict on another collection's call: 403, nothing written, the collection not named
    refused = http.post(gateway + "/bench/verdict", headers=auth(keys["core"]),
                         json={"call": shaky_calls[0], "useful": False, "note": "not mine to judge"})
    assert refused.status_code == 403, refused.text
    message = refused.json()["error"]["message"]
    assert "core-key" in message and "bench/core" in message and "shaky" not in message
    mine = http.post(gateway + "/bench/verdict", headers=auth(keys["core"]),
                      json={"call": core_calls[0], "useful": True})
    assert mine.status_code == 200 and mine.json()["written"] is True

    # the record of another collection: 403; its own, and an unscoped key's view of any: 200
    assert http.get(gateway + "/bench/record", headers=auth(keys["core"]),
                     params={"collection": "bench/shaky"}).status_code == 403
    assert http.get(gateway + "/bench/record", headers=auth(keys["core"]),
                     params={"collection": "shaky:merged"}).status_code == 403
    own = http.get(gateway + "/bench/record", headers=auth(keys["core"]), params={"collection": "core"})
    assert own.status_code == 200 and sum(a["judged"] for a in own.json()["aliases"].values()) == 1
    assert http.get(gateway + "/bench/record", headers=auth(keys["all"]),
                     params={"collection": "shaky"}).status_code == 200

    # pending: another collection's calls are left out, as if they did not exist
    asked = shaky_calls + core_calls
    seen_by_core = http.post(gateway + "/bench/pending", headers=auth(keys["core"]), json={"calls": asked})
    assert seen_by_core.status_code == 200
    assert seen_by_core.json()["pending"] == core_calls[1:]
    seen_by_shaky = http.post(gateway + "/bench/pending", headers=auth(keys["shaky"]), json={"calls": asked})
    assert seen_by_shaky.json()["pending"] == shaky_calls
    seen_by_all = http.post(gateway + "/bench/pending", headers=auth(keys["all"]), json={"calls": asked})
    assert seen_by_all.json()["pending"] == shaky_calls + core_calls[1:]

    async def lines() -> list[verdicts.VerdictLine]:
        async with Database(home / "benchwarmers.db") as db:
            return await verdicts.log(db)

    written = anyio.run(lines)
    assert [(line.verdict.call, line.key_name) for line in written] == [(core_calls[0], "core-key")]


def test_remind_leaves_out_other_collections(keys: dict[str, str], gateway: str, http: httpx.Client) -> None:
    shaky_calls = panel_calls(http, gateway, keys["shaky"], "shaky")
    response = http.post(gateway + "/bench/remind", headers=auth(keys["core"]),
                          json={"session": "s1", "calls": shaky_calls})
    assert response.status_code == 200 and response.json()["due"] == []
    # not marked as reminded for the key that may judge them
    response = http.post(gateway + "/bench/remind", headers=auth(keys["shaky"]),
                          json={"session": "s1", "calls": shaky_calls})
    assert response.json()["due"] == shaky_calls


async def mcp_calls(net: Loopback, base: str, secret: str, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    async with mcp_client(net, base + "/mcp", mode="legacy", headers=auth(secret),
                          timeout=httpx2.Timeout(30, read=120)) as client:
        return [await client.call_tool(name, args) for name, args in calls]


async def test_mcp_verdict_and_pending_hold_to_the_key_scope(keys: dict[str, str], gateway: str,
                                                             tmp_path: Path, net: Loopback) -> None:
    (asked,) = await mcp_calls(net, gateway, keys["shaky"], ("ask", {"collection": "shaky", "prompt": "Review."}))
    assert not asked.is_error
    block = json.loads(asked.content[1].text.partition("\n")[2])
    shaky_calls = [s["call"] for s in block["seats"] if s["status"] == "ok"]
    assert shaky_calls
    transcript = tmp_path / "session.jsonl"
    write_transcript(transcript, [asked])

    judged, pending = await mcp_calls(
        net, gateway, keys["core"], ("verdict", {"call": shaky_calls[0], "useful": True}),
        ("pending_verdicts", {"session": "s1", "transcript": str(transcript)}))
    assert judged.is_error
    assert judged.content[0].text.startswith("Benchwarmers refused verdict (403)")
    assert not pending.is_error and pending.content[0].text == "", "another collection's seats are not named"

    (own,) = await mcp_calls(net, gateway, keys["shaky"], ("pending_verdicts",
                                                      {"session": "s1", "transcript": str(transcript)}))
    assert all(call in own.content[0].text for call in shaky_calls)


def test_an_mcp_session_belongs_to_the_key_that_opened_it(keys: dict[str, str], gateway: str,
                                                          http: httpx.Client) -> None:
    opened = http.post(gateway + "/mcp", json=INITIALIZE, headers={**MCP_HEADERS, **auth(keys["core"])})
    assert opened.status_code == 200
    session = opened.headers["mcp-session-id"]
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
    headers = {**MCP_HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-06-18"}

    for other in (keys["shaky"], keys["all"]):
        stolen = http.post(gateway + "/mcp", json=listing, headers={**headers, **auth(other)})
        assert stolen.status_code == 404, stolen.text  # as if the session did not exist
        assert "tools" not in stolen.text
        assert http.delete(gateway + "/mcp", headers={**headers, **auth(other)}).status_code == 404
    anonymous = http.post(gateway + "/mcp", json=listing, headers=headers)
    assert anonymous.status_code == 401

    owner = http.post(gateway + "/mcp", json=listing, headers={**headers, **auth(keys["core"])})
    assert owner.status_code == 200 and "list_collections" in owner.text, "the owner's session outlived the attempts"
