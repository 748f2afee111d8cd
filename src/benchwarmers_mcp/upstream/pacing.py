"""Pacing and what failures do: the decisions; the state is in ``store/limits.py``.

Before a call (``Pacer.admit``): a paused connection is not called, nor is a resting model (a
call never waits out a rest; only one ending within ``short_wait`` is waited for); where a
limit applies (the user's rpm/rpd/rpmo/tpm/tpd per connection or model, learned limits, windows a
provider reported) the call is counted against the ledger plus the calls in flight, inside one
``BEGIN IMMEDIATE`` transaction so every process on the data folder agrees. A call that fits is
registered in flight; one that does not waits when the window frees before its deadline, else it
is refused without being sent (``RateLimited``, naming the limit and when it resets). A call given
a bound (``CallInfo.wait``: a panel's seat, a route member with another one after it, which may
wait ``Settings.seat_wait``) waits at most that long in all: one that would wait longer is refused
at once, so its seat says so instead of holding the reply for minutes. ``Pacer.held`` answers the
same question without calling: the explorer pool leaves out a model whose call would be refused
so. A connection with nothing limiting it costs no transaction at all: the one gate query says so.

A call is timed from the moment it is let go (``Admission.at``, read inside the admission
transaction), never from when it was asked for: a call that waited is counted in the window it was
sent in. Each retry is admitted again, as the request it is. A window looks back ``slack`` seconds
longer than its span, since a call reaches the provider a little after it is let go. A window the
provider reported and that was nearly used up is followed, once it resets, by a new one of the same
size (``renewed``): the calls queued behind it go out at most ``limit`` per window, not all at once.

After a call (``consequences``): a 429 rests the model (the later of the stated wait and the reset
of every window it reports used up, else 30 minutes, at most 24 hours), a 5xx cools it down, timeouts in a
row rest it, a 404 marks it for retirement, and a refused key or billing problem pauses the whole
connection with an alert. An error that states what the model cannot take (its window, its output
limit, no tools, no images: read by ``catalog/learned.py``) teaches that fact, in the same
settlement.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx

from benchwarmers_mcp.clock import Clock, SystemClock
from benchwarmers_mcp.errors import (
    AuthOrBilling,
    ModelGone,
    ProviderError,
    RateLimited,
    UpstreamFailure,
    UpstreamTimeout,
)
from benchwarmers_mcp.providers.base import prefixed
from benchwarmers_mcp.store import Database, ledger
from benchwarmers_mcp.store import limits as store
from benchwarmers_mcp.store.limits import WINDOW_SECONDS, Gate, Settlement, Spend, StoredQuota, UserLimit
from benchwarmers_mcp.upstream import quota

MONTH = -1.0  # the span of rpmo: the UTC calendar month
SPANS: dict[str, tuple[str, float, str]] = {
    "rpm": ("requests", 60.0, "minute"),
    "rpd": ("requests", 86400.0, "day"),
    "rpmo": ("requests", MONTH, "month"),
    "tpm": ("tokens", 60.0, "minute"),
    "tpd": ("tokens", 86400.0, "day"),
}
NOT_SENT = "rate limit (not sent; paced by the bench)"


@dataclass(frozen=True)
class PacingPolicy:
    margin: float = 2.0  # a wait must end this long before the call's deadline
    recheck: float = 5.0  # while waiting, look again at least this often
    short_wait: float = 5.0  # a 429 asking for at most this long is retried; longer rests the model
    default_rest: float = 1800.0  # a 429 that states no wait
    max_rest: float = quota.MOST_WAIT
    failure_rest: float = 60.0  # a 5xx after its retries
    strike_limit: int = 3  # timeouts in a row that rest a model ...
    strike_rest: float = 600.0  # ... for this long
    pause: float = 3600.0  # a refused key or billing problem pauses its connection
    retries: int = 2
    backoff: float = 0.5
    inflight_grace: float = 60.0  # an in-flight entry outlives its deadline by this much
    slack: float = 2.0  # a window looks back this much longer than its span (a call reaches the provider later)


@dataclass(frozen=True)
class Block:
    what: str
    free_at: float | None  # None: never, within this window (the call alone is larger than the limit)
    guess: bool = False  # free_at is at the latest: a reply may say sooner, so wait rather than refuse


@dataclass(frozen=True)
class Admission:
    """A call let go: its in-flight ticket (when a limit counts it) and the moment it was let go."""

    ticket: int | None
    at: float  # epoch seconds; read inside the admission transaction when the call was counted


def month_start(now: float) -> float:
    moment = datetime.fromtimestamp(now, UTC)
    return datetime(moment.year, moment.month, 1, tzinfo=UTC).timestamp()


def next_month(now: float) -> float:
    moment = datetime.fromtimestamp(now, UTC)
    year, month = (moment.year + 1, 1) if moment.month == 12 else (moment.year, moment.month + 1)
    return datetime(year, month, 1, tzinfo=UTC).timestamp()


def window_start(span: float, now: float, slack: float = 0.0) -> float:
    return month_start(now) if span == MONTH else now - span - slack


def _amount(spend: Spend, metric: str) -> int:
    if metric == "requests":
        return spend.requests
    if metric == "input-tokens":
        return spend.tokens_in
    if metric == "output-tokens":
        return spend.tokens_out
    return spend.tokens_in + spend.tokens_out


def _need(metric: str, tokens: int) -> int:
    return {"requests": 1, "output-tokens": 0}.get(metric, tokens)


def _subject(limit_scope: str, connection: str, alias: str) -> str:
    return f"connection {connection}" if limit_scope == "connection" else f"model {alias}"


def check_limit(limit: UserLimit, spends: list[Spend], tokens: int, now: float, connection: str,
                alias: str, slack: float = 0.0) -> Block | None:
    """Does one more call fit under this limit? ``spends`` are this limit's scope, oldest first; a
    window looks back ``slack`` seconds longer than its span."""
    metric, span, window = SPANS[limit.name]
    since = window_start(span, now, slack)
    counted = [s for s in spends if s.t >= since]
    used, need = sum(_amount(s, metric) for s in counted), _need(metric, tokens)
    if used + need <= limit.value:
        return None
    unit = "requests" if metric == "requests" else "tokens"
    what = (f"{limit.name} {limit.value:,} on {_subject(limit.scope, connection, alias)}"
            f"{' (learned from the provider)' if limit.source == 'learned' else ''}: {used:,} {unit} this {window}")
    if need > limit.value:
        return Block(f"{what}, and this call alone is about {need:,} {unit}", None)
    if span == MONTH:
        return Block(what, next_month(now))
    freed = 0
    for s in counted:
        freed += _amount(s, metric)
        if used - freed + need <= limit.value:
            return Block(what, s.t + span + slack)
    return Block(what, now + span + slack)


def renewed(q: StoredQuota, now: float) -> bool:
    """A reported window that reset, was nearly used up when last reported (calls may be queued
    behind it), and whose successor (as long as it was) is not over: ``store.limits.APPLIES_SQL``."""
    r = q.record
    return (r.reset_at is not None and r.reset_at <= now < r.reset_at + WINDOW_SECONDS.get(r.window, 60.0)
            and r.limit is not None and r.remaining is not None and r.remaining * 4 <= r.limit)


def quota_since(q: StoredQuota, now: float, slack: float = 0.0) -> float:
    """Where the spends that count against a reported window begin."""
    return q.record.reset_at - slack if renewed(q, now) and q.record.reset_at is not None else q.observed_at


def quota_left(q: StoredQuota, spends: list[Spend], now: float, slack: float = 0.0) -> tuple[int, float] | None:
    """What a reported window has left and when it next frees, or None when it no longer applies.

    While it runs: its ``remaining`` minus every call in flight (no reply has reported on those, in
    whatever order they reach the provider) and the calls settled since without a report. Once it
    reset (``renewed``): its ``limit`` minus what was sent since the reset (and what, sent within
    ``slack`` before it, is still in flight: it may land in the new window), until one window
    length after it. A call settled before the reset was counted in the old window: had its reply
    reported the new one, the window would be running again."""
    r = q.record
    if r.reset_at is not None and r.reset_at > now and r.remaining is not None:
        unseen = sum(_amount(s, r.metric) for s in spends if s.inflight or s.t > q.observed_at)
        return r.remaining - unseen, r.reset_at
    if renewed(q, now) and r.reset_at is not None and r.limit is not None:
        reset = r.reset_at  # what was sent since, and what is still on its way from just before
        left = r.limit - sum(_amount(s, r.metric) for s in spends
                             if s.t >= reset or (s.inflight and s.t >= reset - slack))
        return left, r.reset_at + WINDOW_SECONDS.get(r.window, 60.0)
    return None


def check_quota(q: StoredQuota, spends: list[Spend], tokens: int, now: float, slack: float = 0.0) -> Block | None:
    """A provider's reported window (``quota_left``): does one more call fit?"""
    r = q.record
    found = quota_left(q, spends, now, slack)
    if found is None:
        return None
    available, free_at = found
    need = _need(r.metric, tokens)
    if available > 0 and need <= available:
        return None
    who = f"model {q.alias}" if q.alias else f"connection {q.connection}"
    limit = f" of {r.limit:,}" if r.limit is not None else ""
    what = f"{r.metric} per {r.window or 'window'}{limit} on {who} (reported by the provider): {max(0, available):,} left"
    if r.limit is not None and need > r.limit:
        return Block(f"{what}, and this call alone is about {need:,}", None)
    return Block(what, free_at, guess=r.reset_at is not None and r.reset_at <= now)


def worst(blocks: list[Block]) -> Block | None:
    """Every block must clear: the one that frees last (or never) decides; a sure one beats a guess."""
    if not blocks:
        return None
    never = [b for b in blocks if b.free_at is None]
    if never:
        return never[0]
    sure = [b for b in blocks if not b.guess]
    return max(sure or blocks, key=lambda b: b.free_at or 0.0)


def again(free_at: float, now: float) -> str:
    """When a call can be made again, for people and for a record read later: ``try again in 6 m
    (at 2026-07-01T18:06:00+00:00)``."""
    return f"try again in {quota.describe_wait(max(0.0, free_at - now))} (at {quota.iso(free_at)})"


def refusal(block: Block, now: float) -> RateLimited:
    if block.free_at is None:
        return RateLimited(f"{NOT_SENT}: {block.what}")
    wait = max(0.0, block.free_at - now)
    return RateLimited(f"{NOT_SENT}: {block.what}; {again(block.free_at, now)}", retry_after=wait)


def paused_refusal(gate: Gate) -> AuthOrBilling:
    return AuthOrBilling(
        f"not sent: connection {gate.connection} is paused until {quota.iso(gate.paused_until)} after"
        f" {gate.paused_why or 'a refused key'}; fix its key or billing, then resume it (POST /api/limits/resume)")


def rest_refusal(alias: str, gate: Gate, now: float) -> ProviderError:
    """A resting model is not called: a rate limit stays a rate limit, a failure cool-down a failure."""
    why = gate.rest_why or "a rate limit"
    until = gate.rest_until or now
    wait = max(0.0, until - now)
    text = f"model {alias} is resting after {why}; {again(until, now)}"
    if why.startswith(("upstream 429", "pacing")):
        return RateLimited(f"{NOT_SENT}: {text}", retry_after=wait)
    return UpstreamFailure(f"not sent: {text}", retry_after=wait)


class Refused(Exception):
    """Raised by ``Pacer.admit``: the call was not sent. ``rest`` is how long the model should rest."""

    def __init__(self, error: ProviderError, rest: tuple[float, str] | None = None) -> None:
        super().__init__(error.message)
        self.error = error
        self.rest = rest


class Pacer:
    def __init__(self, db: Database, policy: PacingPolicy, clock: Clock | None = None) -> None:
        self.db = db
        self.policy = policy
        self.clock = clock or SystemClock()

    async def admit(self, gate: Gate, alias: str, tokens: int, deadline: float, *,
                    past_pause: bool = False, wait: float | None = None) -> Admission:
        """Wait until the call fits or raise ``Refused``; returns its ``Admission``.

        ``deadline`` is wall-clock (epoch seconds), since windows are shared across processes.
        ``past_pause``: a paused connection still takes this one call (health's confirming call of a
        failure that paused it: a 402 must be seen twice before its model retires); rests and
        limits still apply. ``wait``: the longest it may wait in all, for a window or a rest (None:
        until just before its deadline); one that would wait longer is refused at once.
        """
        latest = deadline - self.policy.margin  # the latest moment a wait may end
        if wait is not None:
            latest = min(latest, self.clock.now() + wait)
        while True:
            now = self.clock.now()
            if gate.paused_until and gate.paused_until > now and not past_pause:
                raise Refused(paused_refusal(gate))
            resting = gate.rest_until is not None and gate.rest_until > now
            if resting:
                block: Block | None = Block(f"model {alias} is resting after {gate.rest_why or 'a rate limit'}",
                                            gate.rest_until)
            elif gate.limited:
                admission, block = await self._try(gate, alias, tokens, deadline)
                if admission is not None:
                    return admission
            else:
                return Admission(None, self.clock.now())
            assert block is not None
            too_late = block.free_at is None or (block.free_at > latest and not block.guess)
            if resting and (too_late or (block.free_at or now) - now > self.policy.short_wait):
                raise Refused(rest_refusal(alias, gate, now))  # a call never waits out a long rest
            if too_late or now >= latest:
                rest = None if block.free_at is None or block.guess else (block.free_at, f"pacing: {block.what}")
                raise Refused(refusal(block, now), rest)
            assert block.free_at is not None
            await self.clock.sleep(max(0.01, min(block.free_at - now, self.policy.recheck, latest - now)))
            gate = await store.gate(self.db, gate.endpoint.name, alias, self.clock.now()) or gate

    async def held(self, gate: Gate, alias: str, tokens: int, wait: float) -> ProviderError | None:
        """What a call to ``alias`` that may wait at most ``wait`` seconds (``admit(wait=...)``) would
        be refused with now for having to wait longer (a pause, a rest or a limit), without calling
        or counting anything; None when it would go within that."""
        now = self.clock.now()
        bound = min(wait, self.policy.short_wait)  # a rest is never waited out longer than this
        if gate.paused_until and gate.paused_until > now:
            return paused_refusal(gate)
        if gate.rest_until is not None and gate.rest_until - now > bound:
            return rest_refusal(alias, gate, now)
        if not gate.limited:
            return None
        block = await self.blocking(self.db, gate.connection, alias, tokens, now)
        if block is None or (block.free_at is not None and block.free_at - now <= wait):
            return None
        return refusal(block, now)

    async def _try(self, gate: Gate, alias: str, tokens: int,
                   deadline: float) -> tuple[Admission | None, Block | None]:
        async with self.db.transaction() as tx:
            now = self.clock.now()  # inside the writer's lock: no process lets a call go between this and the insert
            await store.expire_inflight(tx, now)
            block = await self.blocking(tx, gate.connection, alias, tokens, now)
            if block is not None:
                return None, block
            ticket = await store.add_inflight(tx, gate.connection, alias, tokens, now,
                                              deadline + self.policy.inflight_grace)
            return Admission(ticket, now), None

    async def blocking(self, reader: store.Reader, connection: str, alias: str, tokens: int,
                       now: float) -> Block | None:
        limits = await store.limits_for(reader, connection, alias)
        quotas = await store.live_quotas(reader, connection, alias, now)
        if not limits and not quotas:
            return None
        slack = self.policy.slack
        scopes: dict[str, float] = {}
        for limit in limits:
            key = "connection" if limit.scope == "connection" else "model"
            scopes[key] = min(scopes.get(key, now), window_start(SPANS[limit.name][1], now, slack))
        for q in quotas:
            key = "model" if q.alias else "connection"
            scopes[key] = min(scopes.get(key, now), quota_since(q, now, slack))
        spent = {key: await store.spends(reader, connection, alias if key == "model" else None, since)
                 for key, since in scopes.items()}
        blocks = [check_limit(limit, spent[limit.scope], tokens, now, connection, alias, slack) for limit in limits]
        blocks += [check_quota(q, spent["model" if q.alias else "connection"], tokens, now, slack) for q in quotas]
        return worst([b for b in blocks if b is not None])


# -- retries --

def is_connection_error(error: ProviderError) -> bool:
    return isinstance(error, UpstreamFailure) and error.upstream_status is None and isinstance(
        error.__cause__, httpx.TransportError)


def retry_wait(policy: PacingPolicy, error: ProviderError, attempt: int) -> float | None:
    """Seconds to wait before another try of a call that failed on attempt ``attempt``, or None."""
    if attempt > policy.retries:
        return None
    status = error.upstream_status
    backoff = policy.backoff * 2.0 ** (attempt - 1)
    if isinstance(error, RateLimited):
        wait = error.retry_after if error.retry_after is not None else quota.wait_in_text(error.message)
        return wait if status == 429 and wait is not None and wait <= policy.short_wait else None
    if isinstance(error, (AuthOrBilling, ModelGone)):
        return None
    if status in (408, 409) or (status is not None and status >= 500):
        if error.retry_after is not None:
            return error.retry_after if error.retry_after <= policy.short_wait else None
        return backoff
    return backoff if is_connection_error(error) else None


# -- after a call --

@dataclass
class Seen:
    """The last upstream response of a call: status, headers, host and (for errors) the body."""

    status: int = 0
    headers: Mapping[str, str] | None = None
    host: str = ""
    body: bytes = b""

    @classmethod
    def of(cls, response: httpx.Response | None) -> Seen:
        if response is None:
            return cls()
        body = b""
        if response.status_code >= 400:
            try:
                body = response.content
            except httpx.ResponseNotRead:
                body = b""
        # items(): one pass; dict(headers) looks each name up again, a scan of every header each
        return cls(response.status_code, dict(response.headers.items()), response.request.url.host, body)

    def envelope(self) -> dict[str, Any]:
        return quota.error_envelope(self.body) if self.body else {}


def account_problem(error: ProviderError, seen: Seen) -> str | None:
    status = error.upstream_status or (seen.status if seen.status >= 400 else None)
    if isinstance(error, AuthOrBilling) and status is None:
        return "auth"
    return quota.account_problem(status, seen.envelope())


def _clamp(policy: PacingPolicy, seconds: float) -> float:
    return min(max(seconds, 1.0), policy.max_rest)


def consequences(policy: PacingPolicy, s: Settlement, gate: Gate, error: BaseException | None, seen: Seen,
                 now: float) -> None:
    """Fill a settlement with what this call's outcome teaches: quotas, rests, pauses, alerts."""
    alias, connection = s.row.alias, gate.connection
    message = getattr(error, "message", "") or ""
    if seen.headers:
        s.quotas += quota.records_from_headers(seen.headers, seen.host, now, status=seen.status, message=message)
    if error is None:
        s.clear_strikes, s.clear_pending = gate.strikes > 0, gate.pending_retire
        return
    if not isinstance(error, ProviderError):
        return
    from benchwarmers_mcp.catalog import learned  # its patterns compile at the first failure, not at start

    taught = [] if isinstance(error, (RateLimited, AuthOrBilling, UpstreamTimeout)) else learned.read(message)
    s.facts += [(r.fact, r.value, r.evidence) for r in taught]
    problem = account_problem(error, seen)
    if problem:
        why = f"{'billing or quota' if problem == 'billing' else 'the key was refused'}: {message[:300]}"
        s.pause = (now + policy.pause, why)
        s.alerts.append((problem, connection, f"connection {connection} paused: {why}"))
    elif isinstance(error, ModelGone) and not learned.is_capability(taught):  # "no endpoint takes tools" is not gone
        s.retire_why = message[:300]
        s.alerts.append(("model_gone", alias, f"{alias} may be gone (pending retirement): {message[:300]}"))
    elif isinstance(error, RateLimited) and error.upstream_status == 429:
        envelope = seen.envelope()
        wait = quota.stated_wait(seen.headers or {}, envelope, message, now)
        wait = error.retry_after if wait is None else wait
        reported = quota.records_from_body(envelope, now, wait)
        s.quotas += reported
        reopens = quota.used_up_until(reported)  # a window the body reports used up must reopen too
        if reopens is not None:
            wait = max(wait or 0.0, reopens - now)
        s.learned += quota.learned_limits(message)
        s.rest = (now + _clamp(policy, policy.default_rest if wait is None else wait), prefixed("upstream 429", message)[:214])
    elif isinstance(error, UpstreamTimeout):
        s.strike = (policy.strike_limit, now + policy.strike_rest, f"{policy.strike_limit} timeouts in a row")
    elif error.upstream_status is not None and error.upstream_status >= 500:
        wait = error.retry_after if error.retry_after is not None else policy.failure_rest
        s.rest = (now + _clamp(policy, wait), prefixed(f"upstream {error.upstream_status}", message)[:214])



# -- what is used and left, for GET /bench/quotas --

def limit_window(limit: UserLimit, spends: list[Spend], now: float, slack: float = 0.0) -> dict[str, Any]:
    metric, span, window = SPANS[limit.name]
    counted = [s for s in spends if s.t >= window_start(span, now, slack)]
    used = sum(_amount(s, metric) for s in counted)
    if span == MONTH:
        resets = next_month(now) if used else None
    else:
        resets = counted[0].t + span + slack if counted else None
    return {"metric": metric, "window": window, "limit": limit.value, "used": used,
            "remaining": max(0, limit.value - used), "resets_at": quota.iso(resets),
            "alias": limit.subject if limit.scope == "model" else None, "source": limit.source, "name": limit.name}


def quota_window(q: StoredQuota, spends: list[Spend], now: float, slack: float = 0.0) -> dict[str, Any]:
    """A reported window as the pacer sees it now (``quota_left``); one no longer applying as last reported."""
    r = q.record
    found = quota_left(q, spends, now, slack)
    remaining, resets = (r.remaining, r.reset_at) if found is None else (max(0, found[0]), found[1])
    used = r.limit - remaining if r.limit is not None and remaining is not None else None
    return {"metric": r.metric, "window": r.window or None, "limit": r.limit, "used": used, "remaining": remaining,
            "resets_at": quota.iso(resets), "alias": q.alias or None, "source": r.source,
            "observed_at": quota.iso(q.observed_at)}


async def _windows(db: Database, owners: dict[str, str], now: float,
                   slack: float) -> dict[str, list[dict[str, Any]]]:
    """Every limit and reported quota per connection, with what is used and left: one spends query
    per subject (connection or model), from the earliest moment any of its windows looks back to."""
    shown: list[tuple[str, str | None, float, UserLimit | StoredQuota]] = []
    for limit in await store.all_limits(db):
        connection = limit.subject if limit.scope == "connection" else owners.get(limit.subject)
        if connection is not None:
            alias = limit.subject if limit.scope == "model" else None
            shown.append((connection, alias, window_start(SPANS[limit.name][1], now, slack), limit))
    for q in await store.shown_quotas(db, now - 7 * 86400):
        shown.append((q.connection, q.alias or None, min(q.observed_at, quota_since(q, now, slack)), q))
    since: dict[tuple[str, str | None], float] = {}
    for connection, alias, start, _ in shown:
        since[connection, alias] = min(since.get((connection, alias), start), start)
    spent = {key: await store.spends(db, *key, start) for key, start in since.items()}
    by_connection: dict[str, list[dict[str, Any]]] = {}
    for connection, alias, _, item in shown:
        spends = spent[connection, alias]
        window = (limit_window(item, spends, now, slack) if isinstance(item, UserLimit)
                  else quota_window(item, spends, now, slack))
        by_connection.setdefault(connection, []).append(window)
    return by_connection


async def overview(db: Database, now: float, slack: float = PacingPolicy.slack) -> dict[str, Any]:
    """Per connection: every window with what is used and left and when it resets, who rests, pauses
    (counted as the pacer counts them, ``slack`` included)."""
    owners = await store.model_connections(db)
    names = set(await store.connections(db))
    by_connection = await _windows(db, owners, now, slack)
    resting: dict[str, list[dict[str, Any]]] = {}
    for r in await store.rests(db, now):
        resting.setdefault(owners.get(r["alias"], r["connection"]), []).append(
            {"alias": r["alias"], "until": quota.iso(r["rest_until"]), "why": r["rest_why"]})
    paused = await store.pauses(db, now)
    month = await ledger.totals(db, month_start(now))
    out = []
    for name in sorted(names | set(by_connection) | set(resting) | set(paused)):
        pause = paused.get(name)
        out.append({"connection": name, "windows": by_connection.get(name, []), "resting": resting.get(name, []),
                    "paused": {"until": quota.iso(pause["until"]), "why": pause["why"]} if pause else None,
                    "month": month.get(name, {"calls": 0, "attempts": 0, "tokens_in": 0, "tokens_out": 0,
                                              "reasoning": 0})})
    return {"connections": out, "at": quota.iso(now)}

