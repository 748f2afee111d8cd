"""Issue 18: members, route order and merger by rating. Route mode ranks members by their rating on
the collection's route calls (panel verdicts count too, weighed less); the merger is the best-rated
member that answered."""

from __future__ import annotations

from pathlib import Path

import openai
import pytest

from benchwarmers_mcp.context import Access
from benchwarmers_mcp.engine import merge, ranking
from benchwarmers_mcp.store import Database, models, verdicts
from benchwarmers_mcp.store import collections as collection_store
from benchwarmers_mcp.store import routes as route_store
from benchwarmers_mcp.store.verdicts import Verdict
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.loopback import Loopback
from tests.kits.route import route_server, said
from tests.ratings.kit import bench, judge

LOCAL = Access.unscoped()


async def route_verdicts(db: Database, alias: str, useful: int, not_useful: int) -> None:
    """Route conversations of ``bench/agents`` answered by ``alias``, each judged."""
    for i in range(useful + not_useful):
        claim = await route_store.claim_turn(db, f"{alias}-{i}", "bench/agents", "local", idle_lapse=60)
        call = await route_store.assign_member(db, claim.conversation.id, alias, "bench/agents")
        await verdicts.record(db, Verdict(call, i < useful), access=LOCAL)


@pytest.mark.anyio
async def test_route_order_follows_ratings_not_counts(tmp_path: Path) -> None:
    async with Database(tmp_path / "t.db") as db:
        await bench(db, ["busy", "sharp", "new"], {"agents": ["busy", "sharp", "new"]})
        await route_verdicts(db, "busy", 12, 18)  # the most useful verdicts, from the most seat time
        await route_verdicts(db, "sharp", 6, 0)
        members = [await models.get(db, a) for a in ("busy", "sharp", "new")]
        order = await ranking.rank(db, members, collection="bench/agents")
        assert [m.alias for m in order] == ["sharp", "new", "busy"], "by posterior mean, not by useful count"
        assert [m.alias for m in await ranking.rank(db, members, collection="bench/agents", resting={"sharp"})] == [
            "new", "busy", "sharp"]
        await route_verdicts(db, "new", 0, 5)
        assert [m.alias for m in await ranking.rank(db, members, collection="bench/agents")] == [
            "sharp", "busy", "new"]


@pytest.mark.anyio
async def test_the_merger_is_the_best_rated_member_that_answered(tmp_path: Path) -> None:
    async with Database(tmp_path / "t.db") as db:
        await bench(db, ["a", "b", "c"], {"core": ["a", "b", "c"]})
        await judge(db, "a", 1, 5, label="member", shape="review")
        await judge(db, "b", 5, 1, label="member", shape="review")
        await judge(db, "c", 9, 0, label="member", shape="review")
        core = await collection_store.get(db, "core")
        skipped: list[dict[str, str]] = []
        everyone = await merge.merger_candidates(db, core, "review", skipped)
        assert [m.alias for m in everyone] == ["c", "b", "a"]
        answered = await merge.merger_candidates(db, core, "review", skipped, {"a", "b"})
        assert [m.alias for m in answered] == ["b", "a", "c"], "c did not answer this panel"


def test_a_new_conversation_goes_to_the_best_rated_member(home: Path, settings, upstream: str, net: Loopback,
                                                           fake: FakeUpstream) -> None:
    import anyio

    async def seed() -> None:
        async with Database(home / "benchwarmers.db") as db:
            await bench(db, ["first", "second"], {"agents": ["first", "second"]}, base_url=upstream, tools=True)
            await route_verdicts(db, "first", 1, 4)
            await route_verdicts(db, "second", 4, 1)

    anyio.run(seed)
    fake.script["second"].append(said("from the best rated"))
    with route_server(net, settings) as base, openai.OpenAI(http_client=net.client2(), base_url=base + "/v1",
                                                            api_key="x", max_retries=0) as oa:
        raw = oa.chat.completions.with_raw_response.create(model="bench/agents:route", messages=[
            {"role": "system", "content": "agent"}, {"role": "user", "content": "start"}])
        assert raw.headers["x-bench-model"] == "second"
        assert raw.parse().choices[0].message.content == "from the best rated"
