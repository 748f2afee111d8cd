"""Issue 18: where ratings show. ``list_collections`` over MCP carries each member's rating; a
panel's ``bench`` field says why each explorer was seated; ``GET /bench/ratings`` by collection
and shape."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import httpx
import openai
import pytest

from benchwarmers_mcp.store import Database
from tests.kits import mcp as kit
from tests.kits.loopback import Loopback
from tests.kits.mcp import mcp_client
from tests.ratings.kit import judge

settings, base = kit.settings, kit.base


def judged(home: Path) -> None:
    async def run() -> None:
        async with Database(home / "benchwarmers.db") as db:
            await judge(db, "sage", 8, 2, label="member")
            await judge(db, "lark", 0, 3)
    anyio.run(run)


@pytest.mark.anyio
async def test_list_collections_carries_each_members_rating(base: str, home: Path, net: Loopback) -> None:
    await anyio.to_thread.run_sync(judged, home)
    async with mcp_client(net, base + "/mcp", mode="legacy") as client:
        result = await client.call_tool("list_collections", {})
    core = {c["name"]: c for c in json.loads(result.content[0].text)}["core"]
    assert set(core["ratings"]) == {"sage", "quill"}
    sage, quill = core["ratings"]["sage"], core["ratings"]["quill"]
    assert sage["mean"] == pytest.approx(10 / 14, abs=1e-3) and sage["verdicts"] == pytest.approx(10, abs=0.1)
    assert sage["interval"][0] < sage["mean"] < sage["interval"][1]
    assert quill["mean"] == 0.5 and quill["verdicts"] == 0.0 and quill["rating"] == "unrated"
    assert "status" not in quill, "a rating's standing is its own word, never a second status"
    # each member's status: engine/roster.py's word and why, the one every page shows
    assert {a: s["status"] for a, s in core["member_status"].items()} == {"sage": "healthy", "quill": "untested"}
    assert core["member_status"]["sage"]["why"].startswith("answered ") and "not answered" in core["member_status"]["quill"]["why"]
    assert quill["interval"] == pytest.approx([0.135, 0.865], abs=1e-3), "the Beta(2, 2) prior alone"


def test_the_panel_says_why_each_explorer_sat(base: str, home: Path, net: Loopback) -> None:
    judged(home)
    with openai.OpenAI(http_client=net.client2(), base_url=base + "/v1", api_key="x", max_retries=0) as oa:
        reply = oa.chat.completions.create(model="bench/core", messages=[{"role": "user", "content": "hi"}])
    seats = {s["alias"]: s for s in reply.model_extra["bench"]["seats"]}
    assert seats["ferret"]["seat"] == "explorer" and seats["ferret"]["note"] == "never judged here: seated to learn"
    explorers = [s for s in seats.values() if s["seat"].startswith("explorer")]
    assert len(explorers) == 2 and all(s.get("note") for s in explorers)
    assert "note" not in seats["sage"], "members are not explained"


def test_ratings_over_http_by_collection_and_shape(base: str, home: Path, http: httpx.Client) -> None:
    judged(home)
    everything = http.get(base + "/bench/ratings")
    assert everything.status_code == 200 and everything.json()["collection"] is None
    core = http.get(base + "/bench/ratings", params={"collection": "bench/core"}).json()
    assert [m["alias"] for m in core["models"] if m["member"]] == ["sage", "quill"]
    assert core["models"][0]["evidence"]["panel"] == {"good": 8, "bad": 2, "wrong": 0, "real": 0}
    bad = http.get(base + "/bench/ratings", params={"collection": "core", "shape": "nonsense"})
    assert bad.status_code == 400 and "unknown shape" in bad.json()["error"]["message"]
    missing = http.get(base + "/bench/ratings", params={"collection": "nope"})
    assert missing.status_code == 404
