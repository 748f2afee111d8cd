"""Suite evidence is kept between reads, as verdict evidence is: read again only when an answer was
added (by any store on the database) or an answer's age moved to the next bucket. Every explorer
panel rates its whole pool, so a read that walked every scored answer grew with the suite's history."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from benchwarmers_mcp.store import Database, endpoints, models
from benchwarmers_mcp.store import ratings as rating_store
from benchwarmers_mcp.store import suite as suite_store
from benchwarmers_mcp.store.endpoints import Endpoint
from benchwarmers_mcp.store.models import ModelRecord
from benchwarmers_mcp.store.suite import AnswerRow
from tests.kits.store import Statements, store_of

pytestmark = [pytest.mark.anyio, pytest.mark.backends]

DAY = rating_store.BUCKET
H = 90 * DAY  # the half-life evidence is read for (health only)


@pytest.fixture
async def pair(home: Path) -> AsyncIterator[tuple[Database, Database]]:
    """Two stores on one database, as two processes have."""
    async with store_of(home) as a, store_of(home) as b:
        await endpoints.add(a, Endpoint("up", "http://127.0.0.1:9/v1"))
        for alias in ("a", "b", "c"):
            await models.register(a, ModelRecord(alias, alias, "up", alias))
        yield a, b


def answer(alias: str, at: float, outcome: str = "found", wrong: int = 0) -> AnswerRow:
    return AnswerRow(alias, "task", "ok", True, outcome, "", "", wrong=wrong, at=at)


def counts(rows: list[rating_store.EvidenceRow]) -> dict[tuple[str, float], tuple[int, int, int]]:
    """Good, bad and wrong answers per model and age (a row per outcome: summed here)."""
    out: dict[tuple[str, float], tuple[int, int, int]] = {}
    for r in rows:
        good, bad, wrong = out.get((r.alias, r.age), (0, 0, 0))
        out[(r.alias, r.age)] = (good + r.good, bad + r.bad, wrong + r.wrong)
    return out


async def test_suite_evidence_is_read_again_only_when_an_answer_lands_or_a_day_passes(
        pair: tuple[Database, Database]) -> None:
    a, b = pair
    at = time.time() - 10 * DAY - 0.25 * DAY  # 10.25 days ago: bucket 10 until 0.75 day from now
    for row in (answer("a", at), answer("a", at, "missed"), answer("b", at, "found", wrong=1)):
        await suite_store.record_answer(a, row)
    now = at + 10.5 * DAY
    reads = Statements(b)
    first = await rating_store.evidence(b, now, sources=("suite",), aliases=["a", "b", "c"], half_life=H)
    assert counts(first) == {("a", 10.5 * DAY): (1, 1, 0), ("b", 10.5 * DAY): (1, 0, 1)}
    n = len(reads.sql)
    again = await rating_store.evidence(b, now + 3600, sources=("suite",), aliases=["a"], half_life=H)
    assert len(reads.sql) == n + 1 and "MAX(id)" in reads.sql[-1] and "GROUP BY" not in reads.sql[-1], \
        "one statement: the newest answer's id, not the answers"
    assert counts(again) == {("a", 10.5 * DAY): (1, 1, 0)}, "kept rows, limited to the asked models"

    await suite_store.record_answer(a, answer("c", now - 0.5 * DAY))  # another store adds one
    seen = await rating_store.evidence(b, now + 3600, sources=("suite",), aliases=["a", "c"], half_life=H)
    assert counts(seen) == {("a", 10.5 * DAY): (1, 1, 0), ("c", 0.5 * DAY): (1, 0, 0)}

    later = await rating_store.evidence(b, at + 11.1 * DAY, sources=("suite",), aliases=["a"], half_life=H)
    assert counts(later) == {("a", 11.5 * DAY): (1, 1, 0)}, "the day's boundary passed: aged a bucket"

    async with b.transaction() as tx:  # inside a transaction nothing is kept: read as it stands
        inside = await rating_store.evidence(tx, at + 11.1 * DAY, sources=("suite",), aliases=["a", "b"], half_life=H)
    assert counts(inside) == {("a", 11.5 * DAY): (1, 1, 0), ("b", 11.5 * DAY): (1, 0, 1)}


async def test_kept_evidence_is_the_same_as_evidence_read_afresh(pair: tuple[Database, Database]) -> None:
    a, b = pair
    now = time.time()
    for i in range(30):
        await suite_store.record_answer(a, answer("abc"[i % 3], now - i * 0.4 * DAY, ("found", "missed", "clean")[i % 3],
                                                  wrong=i % 4 == 0))
    for moment in (now, now + 0.3 * DAY, now + 2.7 * DAY):
        kept = await rating_store.evidence(b, moment, sources=("suite", "health"), half_life=H)
        async with b.transaction() as tx:
            fresh = await rating_store.evidence(tx, moment, sources=("suite", "health"), half_life=H)
        assert sorted(kept, key=repr) == sorted(fresh, key=repr), moment
