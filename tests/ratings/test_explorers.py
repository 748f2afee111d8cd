"""Issue 18: explorers chosen to learn. Over many panels the seats go to the models the bench is
unsure about (and to the promising ones), not to the ones known to be poor; never-judged models
sit first; exact recency breaks ties; the family rule and ``with`` nominations still hold; each
explorer's seat says why it was seated."""

from __future__ import annotations

import random
import time
from collections import Counter
from pathlib import Path

import pytest

from benchwarmers_mcp.engine.seating import Explore, seat_panel
from benchwarmers_mcp.messages import Ask, user
from benchwarmers_mcp.store import Database, calls, models
from benchwarmers_mcp.store.calls import PanelRecord, SeatRecord
from benchwarmers_mcp.store.collections import Collection, GatewaySettings
from tests.ratings.kit import bench, judge

pytestmark = pytest.mark.anyio
CORE = Collection("core", ("member",))
ASK = Ask("core", (user("review this"),))
SETTINGS = GatewaySettings(3, 2)


@pytest.fixture
async def db(tmp_path: Path):
    async with Database(tmp_path / "t.db") as db:
        await bench(db, ["member", "poor1", "poor2", "poor3", "known-good", "unsure1", "unsure2", "fresh"], {})
        for poor in ("poor1", "poor2", "poor3"):
            await judge(db, poor, 2, 28)
        await judge(db, "known-good", 24, 6)
        await judge(db, "unsure1", 1, 0)
        await judge(db, "unsure2", 1, 0)
        yield db


async def seat_and_record(db: Database, n: int, explore: Explore) -> Counter[str]:
    """``n`` panels seated by the product and written as it writes them (no verdicts): who explored."""
    seen: Counter[str] = Counter()
    for i in range(n):
        now = time.time() + i
        seating = await seat_panel(db, CORE, ASK, SETTINGS, explore=explore)
        panel = f"p20260101-000000-{i:04x}"
        await calls.create_panel(db, PanelRecord(panel, now, "bench/core", seating.shape, "x", "all", "local", None,
                                                 "q", []))
        for seat in seating.seats:
            await calls.record_seat(db, SeatRecord(f"{panel}.{seat.key}", panel, seat.key, seat.label, seat.alias,
                                                   "ok", 1.0, "a", at=now))
            if seat.label != "member":
                seen[seat.alias] += 1
    return seen


async def test_the_never_judged_sit_first_then_the_uncertain_rotate(db: Database) -> None:
    first = await seat_panel(db, CORE, ASK, SETTINGS)
    explorers = [s for s in first.seats if s.label != "member"]
    assert [s.alias for s in explorers][:1] == ["fresh"]
    assert explorers[0].note == "never judged here: seated to learn"
    assert explorers[1].alias in ("unsure1", "unsure2", "known-good")
    assert explorers[1].note.startswith("upper bound ") and "verdicts" in explorers[1].note


async def test_upper_bound_explorers_go_to_uncertain_models_over_many_panels(db: Database) -> None:
    seen = await seat_and_record(db, 40, Explore("ucb"))
    assert sum(seen[p] for p in ("poor1", "poor2", "poor3")) == 0, seen
    assert seen["unsure1"] + seen["unsure2"] + seen["fresh"] + seen["known-good"] == 80
    assert seen["unsure1"] >= 30 and seen["unsure2"] >= 30, "equal bounds: exact recency shares the seats"
    assert seen["fresh"] == 3, "never judged: seated first, until it has sat three times with no verdict"


async def test_thompson_explorers_favour_uncertain_models_too(db: Database) -> None:
    seen = await seat_and_record(db, 60, Explore("thompson", rng=random.Random(7)))
    poor = sum(seen[p] for p in ("poor1", "poor2", "poor3"))
    unsure = seen["unsure1"] + seen["unsure2"]
    assert unsure > 4 * max(1, poor), seen
    assert seen["known-good"] > poor, seen


async def test_no_verdicts_at_all_means_rotation_by_exact_recency(tmp_path: Path) -> None:
    async with Database(tmp_path / "r.db") as db:
        await bench(db, ["member", "a", "b", "c", "d"], {})
        now = time.time()
        for alias, used in (("a", now - 1), ("b", now - 30), ("c", now - 20), ("d", now - 10)):
            await models.set_last_used(db, alias, used)
        seating = await seat_panel(db, CORE, ASK, SETTINGS)
        assert [s.alias for s in seating.seats] == ["member", "b", "c"]


async def test_family_rule_and_nominations_hold_under_ratings(tmp_path: Path) -> None:
    async with Database(tmp_path / "f.db") as db:
        await bench(db, ["member", "twin-a", "lone"], {})
        await models.register(db, models.ModelRecord("twin-b", "vendor/twin-b", "ep", "twin-a"))
        await judge(db, "twin-a", 9, 0)
        await judge(db, "twin-b", 8, 0)
        await judge(db, "lone", 0, 9)
        seating = await seat_panel(db, CORE, ASK, SETTINGS)
        assert [s.alias for s in seating.seats] == ["member", "twin-a", "lone"], "never two of one family"
        nominated = await seat_panel(db, CORE, Ask("core", (user("x"),), with_=("lone",)), SETTINGS)
        assert [(s.alias, s.note) for s in nominated.seats[1:]] == [("lone", "nominated"),
                                                                     ("twin-a", nominated.seats[2].note)]
        await models.update(db, "twin-a", ad_hoc=True)
        await models.retire(db, "lone", "gone")
        later = await seat_panel(db, CORE, ASK, SETTINGS, resting={"twin-b"})
        assert [s.alias for s in later.seats] == ["member"], "ad hoc, retired and resting are never drawn"
