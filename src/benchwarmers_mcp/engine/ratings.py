"""Ratings with uncertainty: evidence in, a posterior per model, collection and shape out. Pure.

Every source of evidence is kept apart (``Evidence.source``) and combined only here:

    panel / route / shadow   verdicts, useful or not, on panel seats, route calls, shadow answers
    claims                   a verdict with a false claim is *confidently wrong*; one with real claims
                             is counted as verified (both ride on the verdict rows above, their
                             latest line's lists, even a line of claim marks alone, whose
                             unsaid useful counts neither good nor bad: ``marked``)
    suite                    scored suite answers: found or clean is good; missed, wrong line, false
                             alarm is not; a false alarm or an invented finding is confidently wrong
    health                   whether the model answers at all (seats and route turns: ok or failed)

The rating is a Beta posterior over "the next answer is useful": a Beta(2, 2) prior (a model is probably middling) plus each
verdict weighed by how far it is from the scope asked (this collection and shape 1, this collection
on another shape ``other_shape``, another collection ``other_collection``), by its source (suite
answers ``suite_weight``) and by its age (halved every ``half_life_days``), so a model that changed
is noticed. Confidently wrong is a second Beta over the same verdicts; health a third. Intervals are
the posterior's equal-tailed ``level`` interval (exact quantiles of the Beta).

Verdicts sent with a scoped gateway key carry that key's collections (``Evidence.scope``): they count
on those collections' ratings (and on the rating over everything) and on no other collection's, not
even in its raw counts, unless the user chose to count them everywhere (``store.ratings``).

``review`` turns ratings into suggestions: promote a strong explorer into a collection in place of
its weakest member, bench a member that is confidently wrong, dead, or resting too often. Each
suggestion carries its evidence and says whether it is strong enough to be applied automatically.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

DAY = 86400.0
VERDICT_SOURCES = ("panel", "route", "shadow")
SOURCES = (*VERDICT_SOURCES, "suite", "health")
FRESH_SEATS = 3  # calls (health evidence) after which a never-judged model is no longer seated first


@dataclass(frozen=True)
class Evidence:
    """A bucket of like evidence about one model: counts from one source, scope and age."""

    alias: str
    source: str  # one of SOURCES
    collection: str = ""  # qualified (bench/core); "" for the suite and health
    shape: str = ""
    good: int = 0  # useful verdicts, good suite outcomes, answered calls
    bad: int = 0  # not useful, poor suite outcomes, failed calls
    wrong: int = 0  # confidently wrong: verdicts with a false claim, suite false alarms and inventions
    real: int = 0  # verdicts with a verified claim
    age: float = 0.0  # seconds since (the bucket's start)
    scope: tuple[str, ...] | None = None  # the scoped key's collections (bare names); None: every one
    marked: int = 0  # verdicts of claim marks alone (useful not said): trials of confidently wrong, not of useful

    def counts_on(self, collection: str) -> bool:
        """Whether this evidence may move the rating on ``collection`` (qualified; "" for everywhere):
        a scoped key's verdicts move only its own collections' ratings."""
        return self.scope is None or not collection or collection.removeprefix("bench/") in self.scope


@dataclass(frozen=True)
class RatingPolicy:
    prior: tuple[float, float] = (2.0, 2.0)  # a model is probably middling until shown otherwise
    half_life_days: float = 90.0
    other_shape: float = 0.5
    other_collection: float = 0.25
    suite_weight: float = 0.5
    level: float = 0.9

    def decay(self, age: float) -> float:
        if self.half_life_days <= 0:
            return 1.0
        return float(0.5 ** (max(0.0, age) / (self.half_life_days * DAY)))

    def relevance(self, e: Evidence, collection: str, shape: str) -> float:
        if e.source == "suite":
            return self.suite_weight
        if not collection or e.collection == collection:
            return 1.0 if not shape or e.shape == shape else self.other_shape
        return self.other_collection


@dataclass(frozen=True)
class Rating:
    """One model's posterior in one scope, with the raw counts it came from."""

    alias: str
    collection: str
    shape: str
    alpha: float
    beta: float
    weight: float  # weighted verdicts (and suite answers) behind it
    counts: Mapping[str, Mapping[str, int]]  # per source: good, bad, wrong, real (raw, unweighted)
    wrong_alpha: float = 1.0
    wrong_beta: float = 1.0
    health_ok: float = 0.0
    health_failed: float = 0.0
    level: float = 0.9

    @property
    def mean(self) -> float:
        return self.alpha / (self.alpha + self.beta)

    @property
    def sd(self) -> float:
        a, b = self.alpha, self.beta
        return math.sqrt(a * b / ((a + b) ** 2 * (a + b + 1)))

    @property
    def judged(self) -> bool:
        """Any verdict or suite score behind it (a rating of the prior alone is not judged)."""
        return self.weight > 1e-9

    @cached_property
    def interval(self) -> tuple[float, float]:
        return beta_interval(self.alpha, self.beta, self.level)

    def fresh(self, seats: int = FRESH_SEATS) -> bool:
        """Never judged and seldom seated: it sits before every judged model. A model seated
        ``seats`` times with no verdict competes on its prior like the rest (never hogs a seat)."""
        calls = self.counts.get("health", {})
        return not self.judged and calls.get("good", 0) + calls.get("bad", 0) < seats

    def upper(self, z: float) -> float:
        """The upper bound used to seat explorers: mean + z sd (the normal approximation, cheap to
        compute on every panel); a fresh model gets 2.0, above every other."""
        return 2.0 if self.fresh() else min(1.0, self.mean + z * self.sd)

    def draw(self, rng: random.Random) -> float:
        """A Thompson draw from the posterior (a fresh model: 2.0, seated first)."""
        return 2.0 if self.fresh() else rng.betavariate(self.alpha, self.beta)

    @property
    def wrong_share(self) -> float:
        return self.wrong_alpha / (self.wrong_alpha + self.wrong_beta)

    @cached_property
    def wrong_interval(self) -> tuple[float, float]:
        return beta_interval(self.wrong_alpha, self.wrong_beta, self.level)

    @property
    def health_calls(self) -> float:
        return self.health_ok + self.health_failed

    @property
    def health(self) -> float:
        return (1 + self.health_ok) / (2 + self.health_calls)

    @cached_property
    def health_interval(self) -> tuple[float, float]:
        return beta_interval(1 + self.health_ok, 1 + self.health_failed, self.level)

    @property
    def status(self) -> str:
        """How sure the bench is of the rating: ``unrated`` (no verdict), ``learning`` (its interval
        wider than 40 points), ``rated``, or ``confidently wrong``. Whether the model answers at all is
        its status on the roster (``engine/roster.py``), never a rating's word."""
        if not self.judged:
            return "unrated"
        if self.wrong_verdicts >= 3 and self.wrong_interval[0] > 0.3:
            return "confidently wrong"
        low, high = self.interval
        return "learning" if high - low > 0.4 else "rated"

    @property
    def wrong_verdicts(self) -> int:
        return sum(c.get("wrong", 0) for s, c in self.counts.items() if s != "health")

    def as_dict(self) -> dict[str, Any]:
        low, high = self.interval
        wlow, whigh = self.wrong_interval
        return {
            "alias": self.alias, "collection": self.collection, "shape": self.shape,
            "mean": round(self.mean, 3), "interval": [round(low, 3), round(high, 3)], "level": self.level,
            "weight": round(self.weight, 2), "evidence": {s: dict(c) for s, c in self.counts.items()},
            "confidently_wrong": {"share": round(self.wrong_share, 3), "interval": [round(wlow, 3), round(whigh, 3)]},
            "health": {"share": round(self.health, 3), "calls": int(self.health_calls)},
            "status": self.status,
        }


def rate(alias: str, evidence: Iterable[Evidence], *, collection: str = "", shape: str = "",
         policy: RatingPolicy = RatingPolicy()) -> Rating:
    """One model's rating in a scope (``collection`` qualified, ``shape``; empty: everywhere)."""
    a, b = policy.prior
    weight, wa, wb, ok, failed = 0.0, 1.0, 1.0, 0.0, 0.0
    counts: dict[str, dict[str, int]] = {}
    for e in evidence:
        if e.alias != alias or not e.counts_on(collection):
            continue
        tally = counts.setdefault(e.source, {"good": 0, "bad": 0, "wrong": 0, "real": 0})
        for name in ("good", "bad", "wrong", "real"):
            tally[name] += getattr(e, name)
        w = policy.decay(e.age)
        if e.source == "health":
            ok, failed = ok + w * e.good, failed + w * e.bad
            continue
        w *= policy.relevance(e, collection, shape)
        a, b, weight = a + w * e.good, b + w * e.bad, weight + w * (e.good + e.bad)
        wa, wb = wa + w * e.wrong, wb + w * (e.good + e.bad + e.marked - e.wrong)
    return Rating(alias, collection, shape, a, b, weight, counts, wa, max(1.0, wb), ok, failed, policy.level)


def rate_all(aliases: Iterable[str], evidence: Sequence[Evidence], *, collection: str = "", shape: str = "",
             policy: RatingPolicy = RatingPolicy()) -> dict[str, Rating]:
    by_alias: dict[str, list[Evidence]] = {}
    for e in evidence:
        by_alias.setdefault(e.alias, []).append(e)
    return {a: rate(a, by_alias.get(a, ()), collection=collection, shape=shape, policy=policy) for a in aliases}


def p_better(a: Rating, b: Rating) -> float:
    """P(a's usefulness > b's), both posteriors taken as normal (their means and spreads)."""
    spread = math.sqrt(a.sd ** 2 + b.sd ** 2)
    if spread <= 0:
        return 0.5
    return 0.5 * (1 + math.erf((a.mean - b.mean) / (spread * math.sqrt(2))))


# ---- who to bench ------------------------------------------------------------------------------

@dataclass(frozen=True)
class LearningPolicy:
    """When a review suggests a change, and when it is strong enough to apply on its own."""

    promote_p: float = 0.55  # P(challenger better than the weakest member) to suggest a promotion
    min_weight: float = 0.75  # weighted verdicts behind a challenger before it may be promoted (one recent verdict)
    auto_p: float = 0.9  # ... to apply it automatically (when the user opted in)
    auto_min_weight: float = 8.0
    wrong_low: float = 0.3  # bench a member whose confidently-wrong share is surely above this
    wrong_min: int = 3  # ... with at least this many confidently-wrong verdicts
    dead_high: float = 0.25  # bench a member whose health is surely under this
    dead_min_calls: int = 5
    rest_share: float = 0.5  # bench a member resting this share of the recent panels (or more)


@dataclass(frozen=True)
class Suggestion:
    collection: str  # bare name (core)
    kind: str  # promote | bench
    alias: str
    replaces: str = ""
    reason: str = ""
    strength: float = 0.0  # P(better) for a promotion; the bound that crossed for a bench
    auto: bool = False  # strong enough for automatic mode
    evidence: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.collection}|{self.kind}|{self.alias}|{self.replaces}"


def _brief(r: Rating) -> dict[str, Any]:
    low, high = r.interval
    return {"alias": r.alias, "mean": round(r.mean, 3), "interval": [round(low, 3), round(high, 3)],
            "weight": round(r.weight, 2), "status": r.status}


def _benches(name: str, members: Sequence[str], ratings: Mapping[str, Rating], policy: LearningPolicy,
             resting_share: Mapping[str, float]) -> list[Suggestion]:
    out = []
    for alias in members:
        r = ratings.get(alias)
        if r is None:
            continue
        wlow = r.wrong_interval[0] if r.wrong_verdicts >= policy.wrong_min else 0.0
        if wlow > policy.wrong_low:
            out.append(Suggestion(name, "bench", alias, reason=(
                f"confidently wrong: {r.wrong_share:.0%} of its judged answers made a false claim "
                f"(interval from {wlow:.0%}, above {policy.wrong_low:.0%})"), strength=wlow,
                auto=r.wrong_verdicts >= 2 * policy.wrong_min, evidence=_brief(r)))
        elif r.health_calls >= policy.dead_min_calls and r.health_interval[1] < policy.dead_high:
            high = r.health_interval[1]
            out.append(Suggestion(name, "bench", alias, reason=(
                f"dead: answered {int(r.health_ok)} of {int(r.health_calls)} recent calls (at most {high:.0%})"),
                strength=1 - high, auto=r.health_calls >= 2 * policy.dead_min_calls, evidence=_brief(r)))
        elif resting_share.get(alias, 0.0) >= policy.rest_share:
            share = resting_share[alias]
            out.append(Suggestion(name, "bench", alias, reason=f"resting too often: the pacing refused {share:.0%}"
                                  " of its calls this week (rate limits, quotas)",
                                  strength=share, auto=False, evidence=_brief(r)))
    return out


def review(name: str, members: Sequence[str], candidates: Sequence[str], ratings: Mapping[str, Rating],
           policy: LearningPolicy = LearningPolicy(), resting_share: Mapping[str, float] | None = None) -> list[Suggestion]:
    """Suggestions for one collection: benches first, then promotions pairing the strongest
    challengers with the weakest members while the challenger is probably better.

    ``candidates`` are the models that may join (not members, not retired, not ad hoc). A bench
    never takes the collection below one member; a promotion replaces, so it never shrinks it.
    """
    benches = _benches(name, members, ratings, policy, resting_share or {})
    if len(members) - len(benches) < 1:  # never below one member: keep the best-rated of them
        benches = sorted(benches, key=lambda s: ratings[s.alias].mean)[:max(0, len(members) - 1)]
    benched = {s.alias for s in benches}
    weakest = sorted((ratings[a] for a in members if a in ratings and a not in benched), key=lambda r: r.mean)
    strongest = sorted((ratings[c] for c in candidates if c in ratings and ratings[c].weight >= policy.min_weight),
                       key=lambda r: -r.mean)
    out = list(benches)
    for challenger, member in zip(strongest, weakest, strict=False):
        p = p_better(challenger, member)
        if p < policy.promote_p:
            break
        auto = (p >= policy.auto_p and challenger.weight >= policy.auto_min_weight
                and member.weight >= policy.auto_min_weight)
        out.append(Suggestion(name, "promote", challenger.alias, member.alias, reason=(
            f"{challenger.alias} ({challenger.mean:.0%} useful) is probably better than {member.alias} "
            f"({member.mean:.0%}): P = {p:.2f}"), strength=p, auto=auto,
            evidence={"challenger": _brief(challenger), "member": _brief(member)}))
    return out


# ---- the Beta distribution's quantiles ---------------------------------------------------------

def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularised incomplete beta (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-12:
            break
    return h


def beta_cdf(x: float, a: float, b: float) -> float:
    """The regularised incomplete beta I_x(a, b): P(X <= x) for X ~ Beta(a, b)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1 - x) / b


def beta_quantile(q: float, a: float, b: float) -> float:
    """The ``q`` quantile of Beta(a, b): Newton steps from the normal approximation, kept inside a
    shrinking bracket (bisection when a step leaves it), to 1e-10."""
    lo, hi = 0.0, 1.0
    mean, sd = a / (a + b), math.sqrt(a * b / ((a + b) ** 2 * (a + b + 1)))
    x = min(0.999, max(0.001, mean + sd * math.sqrt(2) * _erfinv(2 * q - 1)))
    log_norm = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    for _ in range(100):
        f = beta_cdf(x, a, b) - q
        if f < 0:
            lo = x
        else:
            hi = x
        pdf = math.exp(log_norm + (a - 1) * math.log(x) + (b - 1) * math.log1p(-x)) if 0 < x < 1 else 0.0
        step = x - f / pdf if pdf > 0 else -1.0
        nxt = step if lo < step < hi else (lo + hi) / 2
        if abs(nxt - x) < 1e-10 or hi - lo < 1e-10:
            return nxt
        x = nxt
    return x


def _erfinv(y: float) -> float:
    """The inverse error function, to a few digits (a starting point only)."""
    y = max(-0.999999, min(0.999999, y))
    w = -math.log((1 - y) * (1 + y))
    if w < 5:
        w -= 2.5
        p = 2.81022636e-08
        for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                  -0.00417768164, 0.246640727, 1.50140941):
            p = c + p * w
    else:
        w = math.sqrt(w) - 3
        p = -0.000200214257
        for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                  0.00943887047, 1.00167406, 2.83297682):
            p = c + p * w
    return p * y


def beta_interval(a: float, b: float, level: float = 0.9) -> tuple[float, float]:
    tail = (1 - level) / 2
    return beta_quantile(tail, a, b), beta_quantile(1 - tail, a, b)
