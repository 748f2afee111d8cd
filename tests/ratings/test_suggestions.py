"""Issue 18: who to bench, acted on. A suggestion is raised with its evidence, accepted (CLI and
API) and recorded in the change log with its reason; automatic mode changes members only with
enough evidence; a collection never drops below one member."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from benchwarmers_mcp.access import gateway_keys
from benchwarmers_mcp.engine import learning
from benchwarmers_mcp.errors import BadRequest
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import Database, ledger
from benchwarmers_mcp.store import collections as collection_store
from benchwarmers_mcp.store import ratings as rating_store
from benchwarmers_mcp.store.ratings import LearningSettings
from tests.kits.cli import Bench, bench  # noqa: F401  (the fixture)
from tests.kits.route import read
from tests.kits.security import app_client, bearer
from tests.ratings.kit import bench as make_bench
from tests.ratings.kit import judge


@pytest.fixture
async def db(tmp_path: Path):
    async with Database(tmp_path / "t.db") as db:
        await make_bench(db, ["a", "b", "x", "y"], {"core": ["a", "b"]})
        yield db


@pytest.mark.anyio
async def test_a_strong_explorer_is_suggested_in_place_of_the_weakest_member(db: Database) -> None:
    await judge(db, "a", 2, 8, label="member")
    await judge(db, "b", 9, 1, label="member")
    await judge(db, "x", 9, 1)
    await judge(db, "y", 1, 1)
    review = await learning.review(db, await collection_store.get(db, "core"))
    [s] = review.open
    assert (s.kind, s.alias, s.replaces, s.state) == ("promote", "x", "a", "open")
    assert s.strength > 0.99 and "x" in s.reason and "a" in s.reason
    assert s.evidence["challenger"]["mean"] == pytest.approx(11 / 14, abs=1e-3)
    assert s.evidence["member"]["interval"][1] < s.evidence["challenger"]["interval"][0]
    again = await learning.review(db, await collection_store.get(db, "core"))
    assert [r.id for r in again.open] == [s.id], "the same suggestion is refreshed, not added again"
    assert (await collection_store.get(db, "core")).members == ("a", "b"), "off by default: nothing changes"
    await judge(db, "a", 60, 0, label="member")  # a turns out excellent after all
    later = await learning.review(db, await collection_store.get(db, "core"))
    assert later.open == []
    [withdrawn] = await rating_store.suggestions(db, state="withdrawn")
    assert withdrawn.id == s.id


@pytest.mark.anyio
async def test_automatic_mode_changes_members_only_with_enough_evidence(db: Database) -> None:
    await rating_store.save_learning_settings(db, LearningSettings(auto=True))
    await judge(db, "a", 1, 2, label="member")
    await judge(db, "b", 3, 0, label="member")
    await judge(db, "x", 3, 0)
    weak = await learning.review(db, await collection_store.get(db, "core"))
    [s] = weak.open
    assert s.kind == "promote" and s.alias == "x" and not s.auto, "suggested, but too little to act on alone"
    assert weak.applied == [] and (await collection_store.get(db, "core")).members == ("a", "b")
    await judge(db, "a", 2, 8, label="member")
    await judge(db, "x", 8, 1)
    strong = await learning.review(db, await collection_store.get(db, "core"))
    assert [(r.alias, r.replaces, r.decided_by) for r in strong.applied] == [("x", "a", "auto")]
    assert (await collection_store.get(db, "core")).members == ("x", "b")
    [change] = await rating_store.member_changes(db, "core")
    assert change["by"] == "auto" and change["before"] == ["a", "b"] and change["members"] == ["x", "b"]
    assert "probably better" in change["reason"]


@pytest.mark.anyio
async def test_a_confidently_wrong_member_is_benched_but_never_the_last(db: Database) -> None:
    await judge(db, "a", 1, 9, wrong=8, label="member")
    await judge(db, "b", 5, 5, label="member")
    [s] = (await learning.review(db, await collection_store.get(db, "core"))).open
    assert (s.kind, s.alias) == ("bench", "a") and s.reason.startswith("confidently wrong")
    _, members = await learning.accept(db, s.id)
    assert members == ["b"]
    await judge(db, "b", 0, 10, wrong=10, label="member")
    assert (await learning.review(db, await collection_store.get(db, "core"))).open == [], \
        "the last member is never benched"
    await collection_store.save(db, collection_store.Collection("duo", ("b", "y")))
    await judge(db, "y", 0, 10, wrong=10, label="member", collection="bench/duo")
    await judge(db, "b", 0, 10, wrong=10, label="member", collection="bench/duo")
    raised = [r for r in (await learning.review(db, await collection_store.get(db, "duo"))).open
              if r.kind == "bench"]
    assert len(raised) == 1, "two confidently wrong members: only one may go"
    await learning.accept(db, raised[0].id)
    with pytest.raises(BadRequest):
        await learning.accept(db, raised[0].id)  # decided already


def seed_judged(home: Path) -> None:
    async def run() -> None:
        async with Database(home / "benchwarmers.db") as db:
            await make_bench(db, ["a", "b", "x"], {"core": ["a", "b"]})
            await judge(db, "a", 1, 9, label="member")
            await judge(db, "b", 7, 3, label="member")
            await judge(db, "x", 9, 1)
    anyio.run(run)


def test_suggestions_listed_and_accepted_from_the_cli(home: Path, gateway: str, bench: Bench) -> None:  # noqa: F811
    seed_judged(home)
    listed = bench(gateway, "suggestions", "--json")
    assert listed.returncode == 0, listed.stderr
    [s] = json.loads(listed.stdout)["suggestions"]
    assert (s["kind"], s["alias"], s["replaces"]) == ("promote", "x", "a")
    table = bench(gateway, "suggestions")
    assert "promote" in table.stdout and "automatic mode is off" in table.stderr
    done = bench(gateway, "suggestions", "accept", str(s["id"]))
    assert done.returncode == 0, done.stderr
    assert "members now x, b" in done.stdout
    assert read(home, collection_store.get, "core").members == ("x", "b")
    [change] = read(home, rating_store.member_changes, "core")
    assert change["by"] == "user" and change["suggestion"] == s["id"] and change["reason"] == s["reason"]
    again = bench(gateway, "suggestions", "accept", str(s["id"]))
    assert again.returncode == 1 and "accepted, not open" in again.stderr
    ratings = json.loads(bench(gateway, "ratings", "core", "--json").stdout)
    assert [m["alias"] for m in ratings["models"] if m["member"]] == ["x", "b"]
    assert ratings["models"][0]["evidence"]["panel"]["good"] == 9
    settings = bench(gateway, "settings", "learning", "--auto", "on", "--json")
    assert json.loads(settings.stdout)["auto"] is True
    assert "automatic changes on" in bench(gateway, "settings", "learning").stdout
    scoped = bench(gateway, "settings", "learning", "--scoped-verdicts", "everywhere", "--json")
    assert json.loads(scoped.stdout)["scoped_verdicts"] == "everywhere"
    assert "scoped keys' verdicts count everywhere" in bench(gateway, "settings", "learning").stdout


@pytest.mark.anyio
async def test_a_member_resting_too_often_is_suggested_for_the_bench(db: Database) -> None:
    for i in range(12):  # the ledger's last week: 8 of b's 12 calls refused by the pacing (resting)
        await ledger.append(db, ledger.UsageRow("b", "ep", "ep", "b", "refused" if i < 8 else "ok"))
        await ledger.append(db, ledger.UsageRow("a", "ep", "ep", "a", "refused" if i < 2 else "ok"))
    [s] = (await learning.review(db, await collection_store.get(db, "core"))).open
    assert (s.kind, s.alias, s.auto) == ("bench", "b", False)
    assert s.reason.startswith("resting too often: the pacing refused 67%")


@pytest.mark.anyio
async def test_a_scoped_key_sees_only_the_suggestions_of_its_collections(settings: Settings, home: Path) -> None:
    async with Database(settings.store_target) as db:
        await make_bench(db, ["a", "b", "x", "y", "z"], {"core": ["a", "b"], "side": ["y", "z"]})
        await judge(db, "a", 1, 9, label="member")
        await judge(db, "b", 7, 3, label="member")
        await judge(db, "x", 9, 1)
        await judge(db, "y", 1, 9, label="member", collection="bench/side")
        await judge(db, "z", 7, 3, label="member", collection="bench/side")
        await judge(db, "x", 9, 1, collection="bench/side")
        _, core_only = await gateway_keys.create(db, "core-only", ["core"])
        _, side_only = await gateway_keys.create(db, "side-only", ["side"])
    async with app_client(settings, require_keys=True) as client:
        seen, listed = {}, {}
        for name, key in (("core", core_only), ("side", side_only)):
            r = await client.post("/bench/suggestions", json={}, headers=bearer(key))  # reviews, then lists
            assert r.status_code == 200, r.text
            seen[name] = {s["collection"].removeprefix("bench/") for s in r.json()["suggestions"]}
            async with Database(settings.store_target) as db:  # a key's review raised its collection's alone
                raised = {s.collection for s in await rating_store.suggestions(db)}
            assert raised == ({"core"} if name == "core" else {"core", "side"}), (name, raised)
        for name, key in (("core", core_only), ("side", side_only)):
            r = await client.get("/bench/suggestions", headers=bearer(key))  # as stored
            listed[name] = {s["collection"].removeprefix("bench/") for s in r.json()["suggestions"]}
        everything = await client.get("/bench/suggestions")
    assert seen == listed == {"core": {"core"}, "side": {"side"}}  # each raised, each seen only by its own key
    assert everything.status_code == 401  # no key at all: refused, not listed
