"""Issue 18: ratings and intervals from known verdicts, every source kept apart, older evidence
weighing less, and the store's evidence read back from real rows."""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pytest

from benchwarmers_mcp.context import Access
from benchwarmers_mcp.engine import learning
from benchwarmers_mcp.engine.ratings import DAY, Evidence, RatingPolicy, beta_interval, p_better, rate
from benchwarmers_mcp.store import Database, calls, endpoints, models, verdicts
from benchwarmers_mcp.store import routes as route_store
from benchwarmers_mcp.store.calls import PanelRecord, SeatRecord
from benchwarmers_mcp.store.endpoints import Endpoint
from benchwarmers_mcp.store.models import ModelRecord
from benchwarmers_mcp.store.verdicts import Verdict

pytestmark = pytest.mark.anyio

LOCAL = Access.unscoped()


def numeric_quantile(q: float, a: float, b: float) -> float:
    """The Beta quantile by integrating its density on a fine grid (independent of the product's)."""
    x = np.linspace(0, 1, 400_001)[1:-1]
    log_pdf = (a - 1) * np.log(x) + (b - 1) * np.log1p(-x) - (math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b))
    cdf = np.cumsum(np.exp(log_pdf)) * (x[1] - x[0])
    return float(x[np.searchsorted(cdf, q)])


def panel(alias: str, good: int, bad: int, *, wrong: int = 0, collection: str = "bench/core", shape: str = "review",
          age: float = 0.0, source: str = "panel") -> Evidence:
    return Evidence(alias, source, collection, shape, good, bad, wrong, 0, age)


def test_posterior_mean_and_interval_from_known_verdicts() -> None:
    r = rate("m", [panel("m", 7, 3)], collection="bench/core", shape="review")
    assert (r.alpha, r.beta) == (9.0, 5.0) and r.mean == pytest.approx(9 / 14)  # the Beta(2, 2) prior
    low, high = r.interval
    assert low == pytest.approx(numeric_quantile(0.05, 9, 5), abs=2e-4)
    assert high == pytest.approx(numeric_quantile(0.95, 9, 5), abs=2e-4)
    assert r.counts["panel"] == {"good": 7, "bad": 3, "wrong": 0, "real": 0}
    assert rate("m", [panel("m", 1, 1)], collection="bench/core", shape="review").status == "learning"
    assert rate("m", [panel("m", 21, 9)], collection="bench/core", shape="review").status == "rated"
    unjudged = rate("n", [], collection="bench/core", shape="review")
    assert unjudged.mean == 0.5 and not unjudged.judged and unjudged.status == "unrated"
    assert unjudged.interval == pytest.approx((numeric_quantile(0.05, 2, 2), numeric_quantile(0.95, 2, 2)), abs=2e-4)


def test_more_verdicts_narrow_the_interval_and_separate_models() -> None:
    few = rate("a", [panel("a", 3, 1)], collection="bench/core")
    many = rate("a", [panel("a", 30, 10)], collection="bench/core")
    assert abs(few.mean - many.mean) < 0.15
    assert (many.interval[1] - many.interval[0]) < (few.interval[1] - few.interval[0]) / 2
    weak = rate("b", [panel("b", 10, 30)], collection="bench/core")
    assert p_better(many, weak) > 0.99 and p_better(weak, many) < 0.01


def test_confidently_wrong_is_its_own_share_with_an_interval() -> None:
    r = rate("liar", [panel("liar", 2, 8, wrong=6)], collection="bench/core", shape="review")
    assert r.wrong_share == pytest.approx(7 / 12)
    assert r.wrong_interval == pytest.approx(beta_interval(7, 5))
    assert r.status == "confidently wrong"
    assert r.as_dict()["confidently_wrong"]["share"] == pytest.approx(0.583, abs=1e-3)


def test_evidence_from_elsewhere_and_from_long_ago_weighs_less() -> None:
    policy = RatingPolicy(half_life_days=30)
    here = rate("m", [panel("m", 4, 0)], collection="bench/core", shape="review", policy=policy)
    other_shape = rate("m", [panel("m", 4, 0, shape="design")], collection="bench/core", shape="review", policy=policy)
    other_coll = rate("m", [panel("m", 4, 0, collection="bench/x")], collection="bench/core", shape="review",
                      policy=policy)
    old = rate("m", [panel("m", 4, 0, age=30 * DAY)], collection="bench/core", shape="review", policy=policy)
    assert here.alpha == 6 and other_shape.alpha == 4 and other_coll.alpha == 3 and old.alpha == pytest.approx(4)
    # a model that changed: good long ago, bad lately; the recent verdicts win
    changed = rate("m", [panel("m", 20, 0, age=120 * DAY), panel("m", 0, 6)], collection="bench/core",
                   shape="review", policy=policy)
    assert changed.mean < 0.4


def test_suite_and_health_are_kept_apart_then_combined() -> None:
    evidence = [panel("m", 2, 2), Evidence("m", "suite", good=4, bad=0), Evidence("m", "health", good=1, bad=19)]
    r = rate("m", evidence, collection="bench/core", shape="review")
    assert r.alpha == pytest.approx(2 + 2 + 0.5 * 4) and r.beta == pytest.approx(4)
    assert r.counts["suite"]["good"] == 4 and r.counts["health"]["bad"] == 19
    assert r.health_calls == 20 and r.health_interval[1] < 0.25
    # whether it answers is the roster's word (engine/roster.py), never the rating's
    assert r.status == "learning"


@pytest.fixture
async def db(tmp_path: Path):
    async with Database(tmp_path / "t.db") as db:
        await endpoints.add(db, Endpoint("ep", "http://127.0.0.1:9/v1"))
        for alias in ("a", "b"):
            await models.register(db, ModelRecord(alias, alias, "ep", alias))
        yield db


async def test_the_store_evidence_counts_the_latest_verdict_of_each_call(db: Database) -> None:
    now = time.time()
    await calls.create_panel(db, PanelRecord("p1", now, "bench/core", "review", "collection", "all", "local", None,
                                             "q", []))
    for i, status in enumerate(("ok", "ok", "ok", "error")):
        await calls.record_seat(db, SeatRecord(f"p1.s{i}", "p1", f"s{i}", "member", "a", status, 1.0, "x", at=now))
    await verdicts.record(db, Verdict("p1.s0", False, at=now), access=LOCAL)
    await verdicts.record(db, Verdict("p1.s0", True, at=now), access=LOCAL)  # changed its mind: only this one counts
    await verdicts.record(db, Verdict("p1.s1", False, false=("invented a bug",), at=now), access=LOCAL)
    await verdicts.record(db, Verdict("p1.s2", True, real=("the race",), at=now), access=LOCAL)
    claim = await route_store.claim_turn(db, "k", "bench/core", "local", idle_lapse=60)
    call = await route_store.assign_member(db, claim.conversation.id, "a", "bench/core")
    await verdicts.record(db, Verdict(call, True, at=now), access=LOCAL)
    ratings = await learning.ratings_for(db, "bench/core", "review", ["a", "b"], now=now)
    a = ratings["a"]
    assert a.counts["panel"] == {"good": 2, "bad": 1, "wrong": 1, "real": 1}
    assert a.counts["route"]["good"] == 1
    assert a.counts["health"] == {"good": 3, "bad": 1, "wrong": 0, "real": 0}
    # panel verdicts on this shape at full weight, route calls (another shape) at half
    assert a.alpha == pytest.approx(2 + 0.5 ** (0.5 / 90) * (2 + 0.5), rel=1e-6)
    assert ratings["b"].status == "unrated"
