"""Route mode: one member answers each turn of an agent's conversation, with the agent's tools.

    start_turn(ctx, ask, collection, access=...)
                                      checks the caller's access (403), refuses what no member can
                                      take (400 / 413 / 503), finds the conversation (sticky, in the
                                      store), orders the members, and starts the turn in the app's
                                      task group; returns a RouteTurn
    RouteTurn.ready(wait)             waits for a member to commit (raises 429 / 502 if none did)
    RouteTurn.events(keepalive)       the member's stream events; an error after the commit raises
                                      (a whole turn, ``hold_all``, relays none: ``collect`` has it)
    RouteTurn.answer                  the turn's outcome so far (member, call, answer, usage), kept by
                                      the driver as it happens; ``report.turn_bench`` renders it

Failover happens before the first piece of an answer reaches the agent: an upstream error (429,
5xx, a pacing refusal...), no first event within ``first_token`` seconds (reasoning counts), or
an empty answer moves the turn to the next member, up to ``max_tries``. Reasoning streamed before
the answer is held back with it. The last member's empty answer is its answer. A whole (not
streamed) turn holds the entire answer, so it can fail over at any point. Every turn is a row
(``store.routes``); the prompt is never stored. Tool names a member's API would refuse (too long,
other characters) are shortened for it and mapped back on its calls, within the turn
(``providers.convert.ToolNames``); the face may list the tools it left out (``dropped_tools``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import anyio

from benchwarmers_mcp.context import Access, CallInfo, Context, RouteTuning, require_access
from benchwarmers_mcp.engine import ranking, shadow
from benchwarmers_mcp.engine.pipe import Pipe, within
from benchwarmers_mcp.engine.ranking import Lineup
from benchwarmers_mcp.errors import (
    BadGateway,
    BenchError,
    EmptyAnswer,
    ProviderError,
    RateLimited,
    TooManyRequests,
    UpstreamFailure,
    UpstreamTimeout,
)
from benchwarmers_mcp.messages import (
    Answer,
    AnswerBuilder,
    Ask,
    ModelRequest,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from benchwarmers_mcp.providers.convert import CHAT_NAMES, ToolNames
from benchwarmers_mcp.store import routes as route_store
from benchwarmers_mcp.store.collections import Collection
from benchwarmers_mcp.store.db import StoreUnavailable
from benchwarmers_mcp.store.models import ModelRecord
from benchwarmers_mcp.store.routes import TurnClaim, TurnRecord

log = logging.getLogger("benchwarmers.route")



def tuning(ctx: Context) -> RouteTuning:
    """The app's route tuning when it was made with one, else the timings in Settings."""
    if ctx.route_tuning is not None:
        return ctx.route_tuning
    s = ctx.settings
    return RouteTuning(first_token=s.route_first_token, stream_wait=s.route_stream_wait,
                       turn_timeout=s.route_turn_timeout)


def sticky_key(ask: Ask, session: str | None = None) -> str:
    """SHA-256 (24 hex) of the collection, the gateway key, the system text (or the agent's session
    id when it sends one) and the first user message: what an agent resends unchanged every turn."""
    first = next((m for m in ask.messages if m.role == "user"), None)
    first_text = "" if first is None else first.text + "".join(i.placeholder() for i in first.images)
    context = f"session:{session}" if session else f"system:{ask.system or ''}"
    raw = "\x1f".join((ask.collection, ask.key_name, context, first_text))
    return hashlib.sha256(raw.encode()).hexdigest()[:24]


def member_request(ask: Ask, member: ModelRecord) -> ModelRequest:
    """The request as the agent sent it; an output budget above the member's known limit is cut."""
    options = dict(ask.options)
    if member.max_output:
        for name in ("max_tokens", "max_completion_tokens"):
            value = options.get(name)
            if isinstance(value, int) and not isinstance(value, bool) and value > member.max_output:
                options[name] = member.max_output
    return ModelRequest("", ask.messages, ask.system, ask.tools, ask.tool_choice, ask.parallel_tool_calls,
                        ask.response_format, options)


# ---- what the turn's driver tells the face ------------------------------------------------------

@dataclass(frozen=True)
class Committed:
    member: ModelRecord
    call: str
    failed_over: tuple[dict[str, str], ...]


@dataclass(frozen=True)
class Failed:
    error: BenchError


Item = Committed | Failed | StreamEvent


@dataclass
class RouteTurn:
    """A turn in flight, as a face sees it. The driver writes its outcome (the member committed
    to, its call id, who failed over, the answer as relayed) as it happens; faces only read it."""

    collection: Collection
    conversation: str
    turn: int
    skipped: list[dict[str, str]]
    receive: Pipe[Item]
    hangup: asyncio.Event = field(default_factory=asyncio.Event)
    stop: anyio.CancelScope | None = None  # the driver's: around the member's call in flight
    member: ModelRecord | None = None
    call: str | None = None
    failed_over: tuple[dict[str, str], ...] = ()
    relayed: AnswerBuilder = field(default_factory=AnswerBuilder)
    dropped_tools: list[dict[str, str]] = field(default_factory=list)  # the face's: tools no member can run
    renamed_tools: dict[str, str] = field(default_factory=dict)  # tool names the member saw otherwise
    driver: Callable[[], Awaitable[None]] | None = None  # a whole turn's driver, run by ``ready``
    queued: int = 0  # items the driver sent that were not taken yet
    over: bool = False  # the driver is done: nothing more will come

    def close(self) -> None:
        """Nobody will read the rest: the driver stops the member's call at once."""
        self.receive.close()
        self.hangup.set()
        if self.stop is not None:
            self.stop.cancel()

    @property
    def alias(self) -> str | None:
        return self.member.alias if self.member else None

    def waiting(self) -> bool:
        """Whether the next item must be waited for: none is there yet and the driver is still on.
        (When it is not, a face's next frame comes without an await: it can go out with this one.)"""
        return self.queued == 0 and not self.over

    def _took(self, item: Item) -> Item:
        self.queued -= 1
        return item

    async def ready(self, wait: float | None = None) -> None:
        """Wait (at most ``wait`` seconds) for a member to commit; raise if every member failed first."""
        if self.member is not None:
            return
        try:
            if self.driver is not None:  # a whole turn: its driver runs here, to its end
                driver, self.driver = self.driver, None
                await driver()
            if wait is None or self.receive:  # no timer to set: none, or the commit is there
                await self._commit_or_failure()
            else:
                await within(wait, self._commit_or_failure())
        except BaseException:
            self.close()
            raise

    async def _commit_or_failure(self) -> None:
        try:
            item = self._took(await self.receive.receive())
        except anyio.EndOfStream:
            raise BadGateway("the route turn ended without an answer") from None
        self._event(item)

    async def _receive(self, wait: float | None) -> Item | None:
        """The next item (None after ``wait`` idle seconds): what is already there at once, with no
        trip round the event loop and no timer."""
        try:
            return self._took(self.receive.receive_nowait())
        except anyio.WouldBlock:
            pass
        if not wait:
            return self._took(await self.receive.receive())
        item = await within(wait, self.receive.receive())
        return None if item is None else self._took(item)

    def _event(self, item: Item) -> StreamEvent | None:
        """A stream event for the caller, or None for the commit (a failure raises)."""
        if isinstance(item, Failed):
            raise item.error
        return None if isinstance(item, Committed) else item

    async def events(self, keepalive: float | None = None) -> AsyncIterator[StreamEvent | None]:
        """The member's events; with ``keepalive``, a ``None`` after each idle interval."""
        try:
            while True:
                item: Item | None = None
                try:
                    item = await self._receive(keepalive)
                except anyio.EndOfStream:
                    return
                if item is None:
                    yield None
                elif (event := self._event(item)) is not None:
                    yield event
        finally:
            self.close()

    async def collect(self) -> Answer:
        """The whole answer, once the turn is over (raises what the turn failed with)."""
        async for _ in self.events():
            pass
        return self.answer

    @property
    def answer(self) -> Answer:
        """The answer relayed so far; the whole answer once ``events()`` has ended."""
        return self.relayed.answer()

    @property
    def usage(self) -> Usage | None:
        """The member's own usage, once it has reported it (with its last event)."""
        return self.relayed.finish.usage


# ---- starting a turn ----------------------------------------------------------------------------

async def start_turn(ctx: Context, ask: Ask, collection: Collection, *, access: Access,
                     session: str | None = None, hold_all: bool = False, inline: bool = False) -> RouteTurn:
    """Refuse what no member can take, find the conversation, order the members, start the turn.

    ``inline`` (a whole turn, ``hold_all``): the driver runs in the caller's own task when it calls
    ``ready()``, instead of a task of its own. A whole answer is relayed only once it is whole, so
    nothing is gained by a second task but its start and a wake-up per event; the driver writes
    the turn's row before ``ready()`` returns, as it does in the background."""
    require_access(access).check(collection.name)
    tune = tuning(ctx)
    line = await ranking.lineup(ctx.db, collection, ask)
    claim = await route_store.claim_turn(ctx.db, sticky_key(ask, session), collection.qualified, ask.key_name,
                                         idle_lapse=tune.idle_lapse, eligible={m.alias for m in line.eligible})
    candidates = await order(ctx, line, claim, tune)
    pipe = Pipe[Item]()
    turn = RouteTurn(collection, claim.conversation.id, claim.turn, line.skipped, pipe)
    driver = _Driver(ctx, ask, tune, claim, candidates, hold_all, pipe, turn)
    if len(line.eligible) > 1 and await shadow.enabled(ctx, collection):  # another member answers, unseen
        driver.shadow = shadow.Shadow(ask, collection, claim.conversation.id, claim.turn, await candidates.all(),
                                      lambda m: member_request(ask, m), tune.turn_timeout)
    if inline and hold_all:
        turn.driver = driver.run
    else:
        ctx.spawn(driver.run, name=f"route turn {claim.conversation.id}.{claim.turn}")
    return turn


@dataclass
class Candidates:
    """The members a turn may try, best first, at most ``count``: when the conversation's member
    can take the turn it is ``known`` alone and the others are ranked (``rest``) only if it fails,
    so a sticky turn, the usual one, pays for no ranking."""

    known: list[ModelRecord]
    count: int
    rest: Callable[[], Awaitable[list[ModelRecord]]] | None = None

    async def all(self) -> list[ModelRecord]:
        if self.rest is not None:
            rest, self.rest = self.rest, None
            self.known = [*self.known, *await rest()][:self.count]
        return self.known

    async def get(self, i: int) -> ModelRecord | None:
        if i >= len(self.known):
            await self.all()
        return self.known[i] if i < len(self.known) else None


async def order(ctx: Context, line: Lineup, claim: TurnClaim, tune: RouteTuning) -> Candidates:
    """The conversation's member first when it can take this turn (eligible, and not resting: the
    claim read that), with the others ranked only if it fails; otherwise a fresh ranking, which the
    rotation may lead with the least recently used member. Who rests is read for a ranking alone."""
    count = min(tune.max_tries, len(line.eligible))
    sticky = None if claim.member_rests else next(
        (m for m in line.eligible if m.alias == claim.conversation.alias), None)
    if sticky is not None:
        rest = [m for m in line.eligible if m is not sticky]

        async def ranked_rest() -> list[ModelRecord]:
            return await ranking.rank(ctx.db, rest, resting=await ctx.resting(), later=line.later,
                                      collection=claim.conversation.collection)

        return Candidates([sticky], count, ranked_rest)
    resting = await ctx.resting()
    rotate = tune.chance() < tune.rotation
    ranked = await ranking.rank(ctx.db, line.eligible, resting=resting, rotate=rotate, later=line.later,
                                collection=claim.conversation.collection)
    return Candidates(ranked[:count], count)


def final_error(errors: list[ProviderError], tried: list[dict[str, str]]) -> BenchError:
    """429 when every tried member was rate limited, else 502."""
    listing = "; ".join(f"{t['alias']}: {t['error']}" for t in tried)
    if errors and all(isinstance(e, RateLimited) for e in errors):
        waits = [e.retry_after for e in errors if e.retry_after is not None]
        return TooManyRequests(f"every member tried is rate limited ({listing})",
                               retry_after=min(waits) if waits else None)
    return BadGateway(f"no member answered this turn ({listing})")


def _substantive(event: StreamEvent) -> bool:
    """A piece of the answer itself (reasoning alone is held back)."""
    return isinstance(event, ToolCallDelta) or (isinstance(event, TextDelta) and bool(event.text.strip()))


@dataclass
class _Driver:
    """Runs one turn in the background: tries members in order, relays the one that commits (and
    keeps the turn's outcome on ``turn``), and writes the turn's row whatever happens (the caller
    hanging up included)."""

    ctx: Context
    ask: Ask
    tune: RouteTuning
    claim: TurnClaim
    candidates: Candidates
    hold_all: bool
    send: Pipe[Item]
    turn: RouteTurn
    hung_up: bool = False
    written: bool = False
    tried: list[dict[str, str]] = field(default_factory=list)
    errors: list[ProviderError] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    shadow: shadow.Shadow | None = None  # the collection's shadow seat, started once a member commits

    def __post_init__(self) -> None:
        self.record = TurnRecord(self.claim.conversation.id, self.claim.turn, "error", 0.0,
                                 key_name=self.ask.key_name)

    async def run(self) -> None:
        try:
            await self._run()
        finally:
            self.turn.over = True

    def _put(self, item: Item) -> None:
        """An item for the face (the pipe is unbounded: a send never waits, nor yields)."""
        self.send.send(item)
        self.turn.queued += 1

    async def _run(self) -> None:
        try:
            try:
                with anyio.move_on_after(self.tune.turn_timeout) as scope:
                    await self._turn()
                if scope.cancelled_caught:
                    self.record.status = "timeout"
                    await self._fail(UpstreamTimeout(f"the turn took longer than {self.tune.turn_timeout:g} s"))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                self.record.status = "cancelled"  # the caller hung up; the member's call was stopped
            except StoreUnavailable as e:  # the store failed under the turn: a 503 in the face's shape
                log.error("route turn %s.%s: %s", self.claim.conversation.id, self.claim.turn, e.message)
                self.record.status = "error"
                with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                    await self._fail(e)
            except Exception as e:  # a bug must not vanish in the background: log it, record it, say so
                log.exception("route turn %s.%s failed unexpectedly", self.claim.conversation.id, self.claim.turn)
                self.record.status, self.record.error = "error", f"internal error: {type(e).__name__}"
                with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                    self._put(Failed(BenchError("internal error in route mode; the server log has it")))
            finally:
                await self._write()  # whole even when cancelled: a record (``Database.record``)
        finally:
            self.send.close_writer()

    async def _fail(self, error: BenchError) -> None:
        """The turn has failed: its row first (so whoever hears of it finds the record), then the news."""
        self.record.error = error.message
        await self._write()
        self._put(Failed(error))

    async def _turn(self) -> None:
        i = 0
        while (member := await self.candidates.get(i)) is not None:
            error = await self._attempt(member, last=i == self.candidates.count - 1)
            i += 1
            if error is None:
                return
            self.tried.append({"alias": member.alias, "error": error.message[-300:]})
            self.errors.append(error)
        final = final_error(self.errors, self.tried)
        self.record.status = "rate_limited" if final.status == 429 else "error"
        await self._fail(final)

    def _remaining(self) -> float:
        return max(1.0, self.tune.turn_timeout - (time.monotonic() - self.started))

    async def _attempt(self, member: ModelRecord, *, last: bool) -> ProviderError | None:
        """Try one member. A ProviderError back means: not committed, try the next one. The caller
        hanging up stops the call at once (``RouteTurn.close`` cancels this scope) and is raised.

        The member's stream is read in this task, inside one cancel scope around the whole call:
        its deadline is the first-token timer until the first event comes, then none (the turn's
        own timeout still bounds it). A scope per event would cross the caller's own scopes, which
        stay open between the stream's events."""
        request = member_request(self.ask, member)
        names = ToolNames.of(request, CHAT_NAMES)  # route members are called over chat completions
        request = names.request(request)
        self.turn.renamed_tools = names.renamed
        # a member that fails, or would wait long for a rate window, hands the turn on at once; only
        # the last one tried retries and waits in place
        info = CallInfo("route", "route", self.ask.key_name, retries=None if last else 0,
                        wait=None if last else self.ctx.settings.seat_wait)
        held: list[StreamEvent] = []
        committed = False
        outcome: ProviderError | None = None
        began, self.record.first_token_s = time.monotonic(), None
        with anyio.CancelScope(deadline=anyio.current_time() + self.tune.first_token) as scope:
            self.turn.stop = scope
            if self.turn.hangup.is_set():
                scope.cancel()
            try:
                stream = self.ctx.caller.stream(member, request, timeout=self._remaining(), info=info)
                async with contextlib.aclosing(stream) as events:
                    async for event in events:
                        event = names.event(event)
                        if committed:
                            self._forward(event)
                            continue
                        if self.record.first_token_s is None:
                            self.record.first_token_s = time.monotonic() - began
                            scope.deadline = math.inf
                        held.append(event)
                        if not self.hold_all and _substantive(event):
                            await self._commit(member, held)
                            committed = True
                            # the face sends the 200 and what is held now, before the rest of
                            # an answer that came in one read and the turn's bookkeeping
                            await anyio.lowlevel.checkpoint()
            except ProviderError as e:
                outcome = e
            except StoreUnavailable:  # the store itself failed: the turn's, not this member's (a 503)
                raise
            except BenchError as e:  # the store could not place the member (its endpoint is gone, say)
                outcome = UpstreamFailure(e.message)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                self.hung_up = True
            finally:
                self.turn.stop = None
        if self.hung_up or self.turn.hangup.is_set():
            raise anyio.BrokenResourceError  # run() records the turn as cancelled
        if scope.cancelled_caught:
            outcome = UpstreamTimeout(f"no first token from {member.alias} in {self.tune.first_token:g} s")
        return await self._settle(member, held, committed, outcome, last)

    async def _settle(self, member: ModelRecord, held: list[StreamEvent], committed: bool,
                      outcome: ProviderError | None, last: bool) -> ProviderError | None:
        """What an attempt's end means: after a commit a failure is the turn's (the agent has part
        of the answer); before it, a failure or an empty answer (unless from the last member tried)
        hands the turn on; a whole answer held back is committed now."""
        if committed:
            if outcome is not None:
                self.record.status = "timeout" if isinstance(outcome, UpstreamTimeout) else "error"
                await self._fail(outcome)
            return None
        if outcome is not None:
            return outcome
        if not last and not _has_answer(held):
            return EmptyAnswer(f"{member.alias} answered nothing")
        await self._commit(member, held)
        return None

    async def _commit(self, member: ModelRecord, held: list[StreamEvent]) -> None:
        if self.claim.call is not None and member.alias == self.claim.conversation.alias:
            call = self.claim.call  # the claim took the conversation's member already
        else:
            call = await route_store.assign_member(self.ctx.db, self.claim.conversation.id, member.alias,
                                                   self.turn.collection.qualified)
        self.record.alias, self.record.call = member.alias, call
        failed_over = tuple(self.tried)
        self.turn.member, self.turn.call, self.turn.failed_over = member, call, failed_over
        self._put(Committed(member, call, failed_over))
        if self.shadow is not None:
            self.shadow.start(self.ctx, member)
        if self.hold_all:  # a whole turn's face takes the answer whole (``collect``), not event by event
            for event in held:
                self.turn.relayed.add(event)
        else:
            for event in held:
                self._forward(event)
        self.record.status = "ok"

    def _forward(self, event: StreamEvent) -> None:
        self.turn.relayed.add(event)
        self._put(event)

    async def _write(self) -> None:
        """The turn's row, written once, whole even when the turn is cancelled meanwhile: nothing
        here awaits but ``record_turn``, a record (``Database.record``)."""
        if self.written:
            return
        self.written = True
        record = self.record
        answer = self.turn.answer
        if record.status == "ok" and not (answer.text.strip() or answer.tool_calls):
            record.status = "empty"
        usage = answer.usage or Usage()
        record.seconds = time.monotonic() - self.started
        record.tool_calls, record.finish = len(answer.tool_calls), answer.finish_reason if record.call else None
        record.tokens_in, record.tokens_out, record.reasoning = (usage.input_tokens, usage.output_tokens,
                                                                 usage.reasoning_tokens)
        record.tried = self.tried
        try:
            await route_store.record_turn(self.ctx.db, record)
        except StoreUnavailable as e:  # /health says so; the turn's answer stands
            log.error("could not record route turn %s.%s: %s", record.conversation, record.turn, e.message)
        except Exception:
            log.exception("could not record route turn %s.%s", record.conversation, record.turn)


def _has_answer(events: list[StreamEvent]) -> bool:
    return any(_substantive(e) for e in events)


__all__ = ["RouteTuning", "RouteTurn", "member_request", "start_turn", "sticky_key", "tuning"]

