"""Learning from verdicts: ratings read from the store, reviews that raise suggestions, and
automatic changes when the user opted in (``bench settings learning --auto on``).

    ratings_for(db, collection, shape)   every model's rating in that scope (``engine.ratings``)
    review(db, collection)               the collection's suggestions, synced with the store; in
                                         automatic mode the strong ones are applied and logged
    after_verdict(ctx, call)             a review of the collection the judged call belongs to
    accept(db, id)                       apply one suggestion by hand

A review runs after every verdict (and when suggestions are listed), so the panel after a
verdict already reflects it. Automatic mode applies only suggestions marked ``auto``: a promotion
with P(better) at least ``auto_p`` and ``auto_min_weight`` verdicts behind both models, a bench
with twice the evidence a suggestion needs. Every change is in the change log with its reason.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from benchwarmers_mcp.context import Context
from benchwarmers_mcp.engine.ratings import (
    DAY,
    Evidence,
    LearningPolicy,
    Rating,
    RatingPolicy,
    Suggestion,
    rate_all,
)
from benchwarmers_mcp.engine.ratings import review as review_ratings
from benchwarmers_mcp.errors import BadRequest, NotFound
from benchwarmers_mcp.store import Database, Reader, verdicts
from benchwarmers_mcp.store import collections as collection_store
from benchwarmers_mcp.store import models as model_store
from benchwarmers_mcp.store import ratings as rating_store
from benchwarmers_mcp.store.collections import Collection
from benchwarmers_mcp.store.models import ModelRecord
from benchwarmers_mcp.store.ratings import EvidenceRow, LearningSettings, NewSuggestion, SuggestionRow

log = logging.getLogger("benchwarmers.learning")
RATING, LEARNING = RatingPolicy(), LearningPolicy()
REST_WINDOW = 7 * 86400.0  # "resting too often" looks at the ledger's last week


def _map_evidence(rows: Iterable[EvidenceRow]) -> list[Evidence]:
    return [Evidence(r.alias, r.source, r.collection, r.shape, r.good, r.bad, r.wrong, r.real, r.age, r.scope,
                     r.marked) for r in rows]


def review_shape(c: Collection) -> str:
    """The shape a collection is judged on: route collections on their route calls."""
    return "route" if c.reply == "route" else (c.shape or "general")


async def load_evidence(db: Reader, now: float | None = None, aliases: Iterable[str] | None = None, *,
                        policy: RatingPolicy = RATING) -> list[Evidence]:
    """The evidence about ``aliases`` (None: every model), to be rated with ``policy``: health comes
    compressed for its half-life (two rows a model), so rate it with a policy of the same half-life."""
    return _map_evidence(await rating_store.evidence(db, now, aliases=aliases,
                                                     half_life=policy.half_life_days * DAY))


async def ratings_for(db: Database, collection: str, shape: str, aliases: Iterable[str] | None = None, *,
                      now: float | None = None, policy: RatingPolicy = RATING,
                      evidence: list[Evidence] | None = None) -> dict[str, Rating]:
    """Every named (default: registered) model's rating on ``collection`` (qualified, or "" for
    everywhere) and ``shape`` ("" for every shape). ``evidence``, when given, is ``load_evidence``'s
    for a policy of the same half-life."""
    if aliases is None:
        aliases = [m.alias for m in await model_store.list_all(db)]
    else:
        aliases = list(aliases)
    if evidence is None:
        evidence = await load_evidence(db, now, aliases, policy=policy)
    return rate_all(aliases, evidence, collection=collection, shape=shape, policy=policy)


def brief(r: Rating) -> dict[str, Any]:
    """A rating in a line: mean, interval, weighted verdicts, status (as listings show it)."""
    low, high = r.interval
    return {"mean": round(r.mean, 3), "interval": [round(low, 3), round(high, 3)], "verdicts": round(r.weight, 1),
            "status": r.status}


def candidates(everyone: Mapping[str, ModelRecord], c: Collection) -> list[str]:
    """Who may join a collection: registered, not retired, not ad hoc, not a member."""
    return [a for a, m in everyone.items() if a not in c.members and not m.retired and not m.ad_hoc]


def _map_new(s: Suggestion) -> NewSuggestion:
    return NewSuggestion(s.collection, s.kind, s.alias, s.replaces, s.reason, s.strength, s.auto, s.evidence)


@dataclass
class Review:
    open: list[SuggestionRow]
    applied: list[SuggestionRow] = field(default_factory=list)
    members: tuple[str, ...] = ()


async def review(db: Database, collection: Collection, *, now: float | None = None,
                 ratings: Mapping[str, Rating] | None = None, policy: LearningPolicy = LEARNING,
                 settings: LearningSettings | None = None) -> Review:
    """Raise this collection's suggestions; in automatic mode apply the strong ones, one at a
    time (each re-checked against the members as they are by then)."""
    now = time.time() if now is None else now
    everyone = {m.alias: m for m in await model_store.list_all(db)}
    if ratings is None:
        ratings = await ratings_for(db, collection.qualified, review_shape(collection), everyone, now=now)
    resting = await rating_store.refused_shares(db, now - REST_WINDOW)
    raised = review_ratings(collection.name, collection.members, candidates(everyone, collection), ratings, policy,
                            resting)
    open_rows = await rating_store.sync_open(db, collection.name, [_map_new(s) for s in raised], now)
    settings = settings or await rating_store.learning_settings(db)
    result = Review(open_rows, members=collection.members)
    if not settings.auto:
        return result
    for row in sorted((r for r in open_rows if r.auto), key=lambda r: -r.strength):
        try:
            decided, members = await rating_store.accept(db, row.id, by="auto", now=now)
        except (BadRequest, NotFound):
            continue  # an earlier change this round made it stale; the next review decides again
        result.applied.append(decided)
        result.members = tuple(members)
    if result.applied:
        result.open = await rating_store.suggestions(db, collection=collection.name)
    return result


async def accept(db: Database, suggestion_id: int, *, by: str = "user") -> tuple[SuggestionRow, list[str]]:
    return await rating_store.accept(db, suggestion_id, by=by)


async def review_all(db: Database, *, now: float | None = None) -> list[SuggestionRow]:
    """Every collection reviewed; their open suggestions, newest first."""
    evidence = await load_evidence(db, now)
    everyone = [m.alias for m in await model_store.list_all(db)]
    for c in await collection_store.list_all(db):
        ratings = await ratings_for(db, c.qualified, review_shape(c), everyone, evidence=evidence)
        await review(db, c, now=now, ratings=ratings)
    return await rating_store.suggestions(db)


async def after_verdict(ctx: Context, call: str) -> None:
    """Review the collection a judged call belongs to. A failed review is logged, never raised:
    the verdict is recorded either way."""
    ctx.metrics.verdict()  # every written verdict comes through here, whichever face took it
    try:
        target = await verdicts.call_target(ctx.db, call)
        if target is None:
            return
        name = str(target["collection"]).removeprefix("bench/")
        try:
            collection = await collection_store.get(ctx.db, name)
        except NotFound:
            return
        await review(ctx.db, collection)
    except Exception:
        log.exception("the review after a verdict on %s failed", call)
