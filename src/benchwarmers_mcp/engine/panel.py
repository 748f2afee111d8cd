"""Run a panel: seat it, fan the seats out concurrently, record each seat the moment it
finishes, and hand the results to the face in finish order. Merged mode adds one merger call.

The seats run in the application's background task group, not the request's: a caller that
hangs up does not stop the panel, and every seat is still answered and recorded. The driver
keeps the run's outcome (the seats done, their usage, the merge, the time spent waiting on
upstreams) as it happens, whether or not a face listens; faces only read it.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace

import anyio

from benchwarmers_mcp.context import Access, Context, require_access
from benchwarmers_mcp.engine import merge, reach
from benchwarmers_mcp.engine.collections import PanelReply
from benchwarmers_mcp.engine.pipe import Pipe, within
from benchwarmers_mcp.engine.seating import Seat, Seating, seat_panel
from benchwarmers_mcp.errors import BenchError, ProviderError, RateLimited, Unsupported, UpstreamTimeout
from benchwarmers_mcp.messages import Ask, ModelRequest, Usage
from benchwarmers_mcp.store import calls
from benchwarmers_mcp.store import collections as collection_store
from benchwarmers_mcp.store import endpoints as endpoint_store
from benchwarmers_mcp.store.calls import PanelRecord, SeatRecord
from benchwarmers_mcp.store.collections import Collection
from benchwarmers_mcp.store.db import StoreUnavailable
from benchwarmers_mcp.upstream.caller import CallInfo

log = logging.getLogger("benchwarmers.panel")

QUOTA_NOTICE = re.compile(
    r"out of credits|upgrade your plan|insufficient (credits|quota|balance)|quota (exceeded|exhausted)"
    r"|free[- ]tier (limit|quota)|add credits|payment required", re.I)


@dataclass
class SeatDone:
    record: SeatRecord
    usage: Usage | None
    answered: int = 0  # seats done so far, this one included


@dataclass
class MergeDone:
    record: SeatRecord | None
    answer: str | None
    note: str | None
    usage: Usage | None = None


PanelEvent = SeatDone | MergeDone


@dataclass
class PanelRun:
    """A panel in flight. Its outcome fields are written by the engine's driver as the panel runs;
    iterate ``events()`` once to follow it, or ``wait()`` for the end. The run keeps going if
    nobody does either."""

    panel: PanelRecord
    collection: Collection
    seating: Seating
    reply: PanelReply
    ask: Ask
    receive: Pipe[PanelEvent]
    seats_done: list[SeatRecord] = field(default_factory=list)
    merge: MergeDone | None = None
    usage: Usage = field(default_factory=Usage)
    upstream_seconds: float = 0.0  # the slowest seat, plus the merger: what the caller waited on upstreams
    simulated: frozenset[str] = frozenset()
    started: float = field(default_factory=time.monotonic)
    finished: asyncio.Event = field(default_factory=asyncio.Event)
    relayed: int = 0  # seats whose events a face has passed on (its progress counts these, not seats_done)

    @property
    def id(self) -> str:
        return self.panel.id

    async def events(self, keepalive: float | None = None) -> AsyncIterator[PanelEvent | None]:
        """Events in finish order; with ``keepalive``, a ``None`` after each idle interval."""
        try:
            while True:
                try:
                    event = await (within(keepalive, self.receive.receive()) if keepalive else self.receive.receive())
                except anyio.EndOfStream:
                    return
                yield event  # None: the keep-alive interval passed idle
        finally:
            self.receive.close()

    async def wait(self) -> PanelRun:
        """The run, once every seat (and the merger) is done and recorded. Its events are not
        delivered after this (a face that waits reads the outcome instead)."""
        await self.finished.wait()
        self.receive.close()
        return self

    def seats_in_seat_order(self) -> list[SeatRecord]:
        order = {s.key: i for i, s in enumerate(self.seating.seats)}
        return sorted(self.seats_done, key=lambda r: order.get(r.seat, 99))

    def _seat_done(self, result: SeatDone) -> SeatDone:
        self.seats_done.append(result.record)
        self._add_usage(result.usage)
        result.answered = len(self.seats_done)
        return result

    def _merge_done(self, result: MergeDone) -> MergeDone:
        self.merge = result
        self._add_usage(result.usage)
        if result.record is not None:
            self.upstream_seconds += result.record.seconds
        return result

    def _add_usage(self, usage: Usage | None) -> None:
        if usage:
            self.usage = self.usage + usage


PANEL_OPTIONS = ("temperature", "top_p", "max_tokens", "stop", "seed", "presence_penalty", "frequency_penalty")


def seat_request(ask: Ask) -> ModelRequest:
    """What every seat is sent: the conversation, the system text and the caller's sampling options.

    A model's own call options win over the caller's, and ``max_tokens`` is cut to the model's
    known output limit (``ModelCaller.request_for``). Structured output is not passed: a panel
    answers in markdown.
    """
    options = {k: v for k, v in ask.options.items() if k in PANEL_OPTIONS}
    if "max_completion_tokens" in ask.options and "max_tokens" not in options:
        options["max_tokens"] = ask.options["max_completion_tokens"]
    return ModelRequest("", ask.messages, ask.system, options=options)


def _quota_notice(text: str) -> bool:
    return len(text) < 400 and bool(QUOTA_NOTICE.search(text))


async def run_seat(ctx: Context, panel_id: str, seat: Seat, request: ModelRequest, info: CallInfo,
                   timeout: float) -> SeatDone:
    """Call one seat and record it. Never raises for the model's failures."""
    started = time.monotonic()
    answer_text, error, status, usage = "", "", "ok", None
    try:
        answer = await ctx.caller.complete(seat.model, request, timeout=timeout, info=info)
        answer_text, usage = answer.text.strip(), answer.usage
        if not answer_text:
            status = "empty"
        elif _quota_notice(answer_text):
            status, error = "error", f"provider quota notice: {answer_text}"
    except UpstreamTimeout as e:
        status, error = "timeout", e.message
    except RateLimited as e:  # not sent (it would have had to wait): said at once, with when to try again
        status, error = ("rate_limited" if e.upstream_status is None else "error"), e.message
    except ProviderError as e:
        status, error = "error", e.message
    except StoreUnavailable as e:  # the pacer or the ledger could not reach the store: /health says so
        status, error = "error", e.message
    except Exception as e:  # a bug must not sink the panel; it is logged and reported on the seat
        log.exception("seat %s (%s) failed unexpectedly", seat.key, seat.alias)
        status, error = "error", f"internal error: {type(e).__name__}"
    record = SeatRecord(
        call=f"{panel_id}.{seat.key}", panel=panel_id, seat=seat.key, label=seat.label, alias=seat.alias,
        status=status, seconds=time.monotonic() - started, answer=answer_text, error=error[-500:],
        tokens_in=usage.input_tokens if usage else 0, tokens_out=usage.output_tokens if usage else 0)
    try:
        await calls.record_seat(ctx.db, record)  # whole even when the panel is cancelled: a record
    except Exception as e:  # the store's failure is this seat's, never the panel's or the server's
        record = await _unrecorded(ctx, record, e)
    return SeatDone(record, usage)


async def _unrecorded(ctx: Context, record: SeatRecord, error: Exception) -> SeatRecord:
    """A seat the store did not take is that seat's error, logged once: its answer is not handed
    on (what is not on the record has no call id to judge), the reason is, and a row saying so is
    tried once (it goes in when only the answer was refused; a store that is gone refuses it too,
    and ``/health`` says so)."""
    why = error.message if isinstance(error, BenchError) else f"{type(error).__name__}: {error}"
    failed = replace(record, status="error", answer="", error=f"the store could not record this seat: {why}"[:500])
    log.error("seat %s (%s) could not be recorded: %s", record.call, record.alias, why,
              exc_info=None if isinstance(error, StoreUnavailable) else error)
    try:
        await calls.record_seat(ctx.db, failed)
    except Exception:  # said above, once
        pass
    return failed


async def start_panel(ctx: Context, ask: Ask, collection: Collection, reply: PanelReply, *,
                      access: Access) -> PanelRun:
    """Seat the panel (raising any refusal before a byte is sent) and start it in the background.
    ``reply`` is the mode ``collections.reply_mode`` resolved for this request; ``access`` is the
    caller's, checked here whatever the face did."""
    require_access(access).check(collection.name)
    if ask.has_tool_traffic:
        raise Unsupported(
            f"a panel answers with text, so tools, tool calls and tool results are refused; for an agent with "
            f"tools use route mode: bench/{ask.collection}:route")
    gateway = await collection_store.gateway_settings(ctx.db)
    nominable = await reach.models(ctx.db, access) if ask.with_ else None  # a scoped key's, for ``with``
    seating = await seat_panel(ctx.db, collection, ask, gateway, await ctx.resting(), nominable=nominable,
                               held=lambda model, tokens: ctx.caller.held(model, tokens, ctx.settings.seat_wait))
    panel = PanelRecord(
        id=calls.new_panel_id(), at=time.time(), collection=collection.qualified, shape=seating.shape,
        shape_by=seating.shape_by, reply=reply, key_name=ask.key_name, system=ask.system,
        prompt=ask.prompt_text, skipped=seating.skipped)
    await calls.create_panel(ctx.db, panel)
    pipe = Pipe[PanelEvent]()  # the engine's own channel (an anyio stream cost a backend lookup each)
    sim = await endpoint_store.simulated_names(ctx.db)
    simulated = frozenset(s.alias for s in seating.seats if s.model.endpoint in sim)
    run = PanelRun(panel, collection, seating, reply, ask, pipe, simulated=simulated)
    ctx.spawn(_drive, ctx, run, pipe, name=f"panel {run.id}")
    return run


def _send(send: Pipe[PanelEvent], event: PanelEvent) -> None:
    try:
        send.send(event)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        pass  # nobody is listening any more; the run has it, and the store


async def _drive(ctx: Context, run: PanelRun, send: Pipe[PanelEvent]) -> None:
    """Run every seat, then the merger; the run's outcome is written here, each part as it happens."""
    info = CallInfo("gateway", "panel", run.ask.key_name, wait=ctx.settings.seat_wait)  # never holds the reply long
    request = seat_request(run.ask)

    async def one(seat: Seat) -> None:
        result = await run_seat(ctx, run.id, seat, request, info, ctx.settings.seat_timeout)
        _send(send, run._seat_done(result))

    try:
        try:
            async with anyio.create_task_group() as tg:
                for seat in run.seating.seats:
                    tg.start_soon(one, seat)
            run.upstream_seconds = max((s.seconds for s in run.seats_done), default=0.0)
            if run.reply == "merged":
                try:
                    merged = await _merge(ctx, run, info)
                except Exception as e:  # the store failing under the merge: the seats still go out
                    log.error("the merge of panel %s failed: %s", run.id, e, exc_info=not isinstance(e, StoreUnavailable))
                    merged = MergeDone(None, None, f"the merge failed: {e}"[:300])
                _send(send, run._merge_done(merged))
        finally:
            run.finished.set()
    finally:
        send.close_writer()  # closed last: a face that hears the end finds the whole outcome on the run


async def _merge(ctx: Context, run: PanelRun, info: CallInfo) -> MergeDone:
    done = run.seats_done
    answered = [s for s in done if s.status == "ok"]
    if not answered:
        return await _fallback(ctx, run, "no seat answered")
    order = {s.key: i for i, s in enumerate(run.seating.seats)}
    answered.sort(key=lambda r: order.get(r.seat, 99))
    request = merge.merge_request(run.ask, answered)
    candidates = await merge.merger_candidates(ctx.db, run.collection, run.seating.shape, run.panel.skipped,
                                               {s.alias for s in answered})
    # a model that just failed in this panel, or is resting after a rate limit, does not merge it
    unfit = {s.alias for s in done if s.status in ("error", "timeout", "rate_limited")} | set(await ctx.resting())
    chosen = next((m for m in candidates if m.alias not in unfit and merge.fits(m, request)), None)
    if chosen is None:
        return await _fallback(ctx, run, "no merger fits the answers" if candidates else "no merger available")
    result = await run_seat(ctx, run.id, Seat("merger", "merger", chosen), request, info, ctx.settings.seat_timeout)
    if result.record.status != "ok":
        why = f"the merger {chosen.alias} failed ({result.record.status}: {result.record.error[:200]})"
        return await _fallback(ctx, run, why, result.record)
    await calls.set_panel_note(ctx.db, run.id, "merged", None)
    return MergeDone(result.record, result.record.answer, None, result.usage)


async def _fallback(ctx: Context, run: PanelRun, why: str, record: SeatRecord | None = None) -> MergeDone:
    with anyio.CancelScope(shield=True):
        await calls.set_panel_note(ctx.db, run.id, "all", why)
    return MergeDone(record, None, why)
