"""The auto-retire rules, as pure functions over evidence (no store, no clock: ``now`` and a
``day_of`` are passed in), so each rule is tested on its own.

A model's clock starts at its registration or its latest restore; only evidence after the later of
that and its last answer (from any source) counts. Then:

- **at once**: the latest failure is ``structural``, ``paywalled`` or ``entitlement`` and at most a
  day old: the job makes one confirming call, and retires only if it fails the same way;
- **missing**: its endpoint's listing has not named it for 3 days, and it has not answered since;
- **failing**: ``other`` failures on 3 distinct days;
- **backstop**: no answer for 7 days, with failures on at least 3 distinct days.

Rate limits and account quotas (``capacity``), ``timeout`` and ``signin`` failures never count.
The **connection guard**: when every model with evidence on a connection (at least two) is down,
the connection is the problem: none of them is retired, and the connection is held instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import date
from typing import Literal

from benchwarmers_mcp.health.classify import AT_ONCE, NEVER_ALONE
from benchwarmers_mcp.upstream.listing import lists

listed = lists  # is a served name in a listing: one definition, upstream/listing.py

DAY = 86400.0
CONFIRM_WITHIN = DAY
MISSING_FOR = 3 * DAY
FAILING_DAYS = 3
BACKSTOP_QUIET = 7 * DAY
BACKSTOP_DAYS = 3
Action = Literal["keep", "watch", "confirm", "retire", "held"]
DayOf = Callable[[float], date]


@dataclass(frozen=True)
class Outcome:
    at: float
    answered: bool
    failure: str | None = None
    detail: str = ""
    source: str = "probe"


@dataclass(frozen=True)
class Evidence:
    alias: str
    connection: str
    since: float  # registration or the latest restore
    outcomes: tuple[Outcome, ...] = ()  # oldest first
    last_answer: float | None = None  # from any source
    missing_since: float | None = None  # the first listing, of those since, that did not name it

    @property
    def answered_at(self) -> float:
        """Where the evidence starts: the clock's start or the last answer, whichever is later."""
        return max(self.since, self.last_answer or 0.0)

    def failures(self) -> list[Outcome]:
        start = self.answered_at
        return [o for o in self.outcomes if not o.answered and o.failure and o.at > start]

    @property
    def missing(self) -> bool:
        return self.missing_since is not None and self.missing_since > (self.last_answer or 0.0)

    @property
    def has_evidence(self) -> bool:
        return bool(self.failures()) or self.missing or (self.last_answer or 0.0) >= self.since or any(
            o.at >= self.since for o in self.outcomes)

    @property
    def down(self) -> bool:
        """Its latest word is a failure: nothing answered since."""
        return bool(self.failures()) or self.missing


@dataclass(frozen=True)
class Decision:
    alias: str
    connection: str
    action: Action
    rule: str | None = None  # confirmed, missing, failing, backstop
    why: str = ""
    retires_at: float | None = None  # for a watched model: when a rule would fire
    failure: Outcome | None = None  # the failure a confirming call must repeat


def _days(outcomes: Iterable[Outcome], day_of: DayOf) -> set[date]:
    return {day_of(o.at) for o in outcomes}


def _said(o: Outcome) -> str:
    return f"{o.failure}: {o.detail}" if o.detail else str(o.failure)


def judge(e: Evidence, now: float, day_of: DayOf) -> Decision:
    """What the rules say about one model now."""
    fails = e.failures()
    counted = [f for f in fails if f.failure not in NEVER_ALONE]
    latest = fails[-1] if fails else None
    if latest is not None and latest.failure in AT_ONCE and latest.at >= now - CONFIRM_WITHIN:
        return Decision(e.alias, e.connection, "confirm", "confirmed", _said(latest), now, latest)
    if e.missing and e.missing_since is not None and e.missing_since <= now - MISSING_FOR:
        return Decision(e.alias, e.connection, "retire", "missing",
                        f"its endpoint has not listed it for {int((now - e.missing_since) // DAY)} days")
    other = [f for f in fails if f.failure == "other"]
    if len(_days(other, day_of)) >= FAILING_DAYS:
        return Decision(e.alias, e.connection, "retire", "failing",
                        f"failed on {len(_days(other, day_of))} days; latest {_said(other[-1])}")
    quiet = now - e.answered_at
    if quiet >= BACKSTOP_QUIET and len(_days(counted, day_of)) >= BACKSTOP_DAYS:
        return Decision(e.alias, e.connection, "retire", "backstop",
                        f"no answer for {int(quiet // DAY)} days, failures on {len(_days(counted, day_of))} days;"
                        f" latest {_said(counted[-1])}")
    return _watch(e, now, day_of, counted, other)


def _watch(e: Evidence, now: float, day_of: DayOf, counted: list[Outcome], other: list[Outcome]) -> Decision:
    """Not yet: when the first rule would fire if nothing answers, or keep."""
    times: list[tuple[float, str]] = []
    if e.missing and e.missing_since is not None:
        times.append((e.missing_since + MISSING_FOR, "its endpoint no longer lists it"))
    if other:
        times.append((now + (FAILING_DAYS - len(_days(other, day_of))) * DAY, f"failing: {_said(other[-1])}"))
    if counted:
        times.append((e.answered_at + BACKSTOP_QUIET, f"no answer since it failed: {_said(counted[-1])}"))
    if not times:
        return Decision(e.alias, e.connection, "keep")
    at, why = min(times)
    return Decision(e.alias, e.connection, "watch", None, why, max(at, now))


def guard(decisions: list[Decision], evidence: dict[str, Evidence]) -> tuple[list[Decision], dict[str, list[str]]]:
    """The connection guard: on a connection where every model with evidence (two or more) is down,
    nothing is retired or confirmed; those decisions become ``held``. Returns the decisions and the
    held connections with their models."""
    by_connection: dict[str, list[Evidence]] = {}
    for e in evidence.values():
        by_connection.setdefault(e.connection, []).append(e)
    held: dict[str, list[str]] = {}
    for connection, group in by_connection.items():
        seen = [e for e in group if e.has_evidence]
        if len(seen) >= 2 and all(e.down for e in seen):
            held[connection] = sorted(e.alias for e in seen)
    out = [replace(d, action="held") if d.connection in held and d.action in ("retire", "confirm") else d
           for d in decisions]
    return out, {c: models for c, models in held.items()
                 if any(d.connection == c and d.action == "held" for d in out)}


def missing_since(served: str, snapshots: Iterable[tuple[float, bool, tuple[str, ...]]], since: float) -> float | None:
    """The first of the latest run of good listings (``(at, ok, names)``, oldest first, from ``since``)
    that did not name ``served``; None when the latest good listing names it. Failed listings say nothing."""
    first: float | None = None
    for at, ok, names in snapshots:
        if not ok or at < since:
            continue
        if listed(served, names):
            first = None
        elif first is None:
            first = at
    return first
