"""A model's status: one word from one closed vocabulary, and the reason, decided here and only here.

Every page, the admin API (``GET /api/models``, ``/api/health``), the CLI (``bench models``, ``bench
model show``), MCP's ``list_collections`` and the explorer seating read it from this module. The
words, most pressing first (the first that applies is the status):

    retired    off the bench, by you or a retire rule; its record stays (``bench model restore``)
    retiring   a retire rule retires it on a date unless it answers
    gone       its endpoint said it is not there (a 404, "no such model"), on a call or a health check
    failing    its latest health check failed (timed out, answered nothing, an error, the key refused)
    resting    it waits out a rate limit or failures, or its connection is paused, until a time
    healthy    it answered, and nothing above applies
    untested   it never answered and nothing above applies

``status_of`` is a pure function of the model's record, its signs (``store/roster.py``: a call that
found it gone, a retire rule's alert, its latest health check unanswered since, a rest) and when it
last answered. A model ``retiring``, ``gone`` or ``failing`` is not seated as an explorer
(``Status.explores``, read by ``engine/seating.py``) until it answers again: any answer, a probe's
or a member's, clears the sign. Members still fail over as they always do.

A rating has its own words (``engine/ratings.py``: unrated, learning, rated, confidently wrong):
they say how sure the bench is that its answers are useful, not whether it answers at all. Ad hoc
is a setting of the model, shown beside its status, never instead of it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from benchwarmers_mcp.clock import ago, moment_of
from benchwarmers_mcp.store import Database
from benchwarmers_mcp.store import health as health_store
from benchwarmers_mcp.store import roster as roster_store
from benchwarmers_mcp.store.models import ModelRecord

STATUSES = ("retired", "retiring", "gone", "failing", "resting", "healthy", "untested")
TONES = {"retired": "", "retiring": "err", "gone": "err", "failing": "err", "resting": "warn", "healthy": "ok",
         "untested": ""}
BARRED = frozenset({"retired", "retiring", "gone", "failing"})  # never drawn as an explorer
PACED = "capacity"  # a health check the pacing or a rate limit stopped says nothing of the model (classify.py)
FAILED_WORDS = {"structural": "it is not there", "paywalled": "it needs payment now",
                "entitlement": "this account may not use it", "other": "it failed", "empty": "it answered nothing",
                "signin": "the key was refused", "timeout": "it timed out"}
ANSWER_AGAIN = "not seated as an explorer until it answers again (Probe now on Health, or bench model retry {alias})"


@dataclass(frozen=True)
class Failed:
    at: float
    failure: str  # the failure class (health/classify.py)
    detail: str = ""


@dataclass(frozen=True)
class Signs:
    """What the store says about one model's health now (``signs_of``)."""

    gone: str | None = None  # a call found it gone: the provider's words
    retiring: Mapping[str, Any] | None = None  # the retiring alert's detail: retires_at, days, why
    failed: Failed | None = None  # its latest health check, failed, with no answer since
    rest: tuple[float, str] | None = None  # resting until, why (the latest of its rests and pauses)
    answered: float | None = None  # when it last answered, from any source


@dataclass(frozen=True)
class Status:
    word: str  # one of STATUSES
    why: str  # the reason, in a sentence a person reads
    since: float | None = None  # when the sign that decided it was seen (or the rest ends, for resting)

    def __post_init__(self) -> None:
        if self.word not in STATUSES:
            raise ValueError(f"{self.word!r} is not a status: one of {', '.join(STATUSES)}")

    @property
    def tone(self) -> str:
        return TONES[self.word]

    @property
    def explores(self) -> bool:
        """Whether the model may be drawn as an explorer (resting is checked where the seat is drawn)."""
        return self.word not in BARRED

    def to_json(self) -> dict[str, Any]:
        return {"status": self.word, "status_why": self.why}


def status_of(m: ModelRecord, s: Signs, now: float) -> Status:
    """The model's status and why: the first word of ``STATUSES`` that applies."""
    if m.retired:
        return Status("retired", m.retired_why or "retired", m.retired_at)
    if s.retiring is not None:
        when = moment_of(s.retiring.get("retires_at"))
        day = "on its date" if when is None else "today" if when <= now else ago(when, now)
        return Status("retiring", f"retires {day} unless it answers: {s.retiring.get('why') or 'its checks failed'}",
                      when)
    again = ANSWER_AGAIN.format(alias=m.alias)
    if s.gone is not None:
        return Status("gone", f"a call found it gone: {s.gone or 'the endpoint does not serve it'}; {again}")
    if s.failed is not None and s.failed.failure == "structural":
        return Status("gone", f"its health check {ago(s.failed.at, now)} found it gone"
                      + (f": {s.failed.detail}" if s.failed.detail else "") + f"; {again}", s.failed.at)
    if s.failed is not None and s.failed.failure != PACED:
        said = FAILED_WORDS.get(s.failed.failure, "it failed")
        return Status("failing", f"its health check {ago(s.failed.at, now)} failed: {said}"
                      + (f" ({s.failed.detail})" if s.failed.detail else "") + f"; {again}", s.failed.at)
    if s.rest is not None and s.rest[0] > now:
        return Status("resting", f"back {ago(s.rest[0], now)}: {s.rest[1] or 'resting'}", s.rest[0])
    if s.answered is not None:
        return Status("healthy", f"answered {ago(s.answered, now)}", s.answered)
    return Status("untested", "has not answered yet: it is seated to learn, or Probe now on Health")


def _retiring(detail: str) -> Mapping[str, Any]:
    try:
        found = json.loads(detail or "{}")
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def gather(rows: Iterable[roster_store.Sign], answered: Mapping[str, float] | None = None) -> dict[str, Signs]:
    """The store's signs, per alias (``answered``: when each last answered, when it was read)."""
    found: dict[str, dict[str, Any]] = {}
    for r in rows:
        mine = found.setdefault(r.alias, {})
        if r.sign == "gone":
            mine["gone"] = r.why
        elif r.sign == "retiring":
            mine["retiring"] = _retiring(r.why)
        elif r.sign == "failed":
            mine["failed"] = Failed(r.at, r.failure, r.why)
        elif r.sign == "rest" and r.at > mine.get("rest", (0.0, ""))[0]:
            mine["rest"] = (r.at, r.why)
    for alias, moment in (answered or {}).items():
        found.setdefault(alias, {})["answered"] = moment
    return {alias: Signs(**values) for alias, values in found.items()}


@dataclass(frozen=True)
class Roster:
    """Every model's status at one moment, and when each last answered (when it was read)."""

    statuses: Mapping[str, Status] = field(default_factory=dict)
    answered: Mapping[str, float] = field(default_factory=dict)

    def __getitem__(self, alias: str) -> Status:
        return self.statuses[alias]

    def barred(self) -> frozenset[str]:
        return frozenset(a for a, s in self.statuses.items() if not s.explores)


async def read(db: Database, models: Iterable[ModelRecord], now: float, *, answers: bool = True) -> Roster:
    """Each model's status now. ``answers=False`` leaves when each last answered unread (four reads
    over the call tables): the word is then the same except healthy reads untested, which bars
    nobody, so the seating asks it that way."""
    answered = await health_store.last_answers(db) if answers else None
    signs = gather(await roster_store.signs(db, now), answered)
    return Roster({m.alias: status_of(m, signs.get(m.alias, Signs()), now) for m in models}, answered or {})


async def barred(db: Database, models: Iterable[ModelRecord], now: float) -> frozenset[str]:
    """The models not seated as explorers now: retiring, gone or failing (and retired)."""
    return (await read(db, models, now, answers=False)).barred()


__all__ = ["BARRED", "STATUSES", "TONES", "Failed", "Roster", "Signs", "Status", "barred", "gather", "read",
           "status_of"]
