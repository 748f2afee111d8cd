"""Running the suite: a run is a row with its planned items, asked in the background.

Each connection gets one worker that asks its items one at a time (a lease in the store keeps it
to one suite call per connection across processes, with the run's gap between calls). Every call
goes through ``ctx.caller.complete`` as ``caller="suite", purpose="measurement"``, so it is paced
and lands in the ledger as measurement, not real work.

- A rate limit (``RateLimited``, whether upstream said 429 or the bench's pacing refused it) is
  not a score: the item goes back to pending, its model rests (the stated wait, else
  ``policy.rest``), the worker asks the connection's other models meanwhile and the run resumes
  after the rest. A model given back ``policy.give_up`` times in one run is given up on: the item
  in hand is kept as *not a score: rate limited*, its other pending items are left unasked, and
  the run finishes.
- Upstream failures are asked again up to ``policy.retries`` times (``backoff`` x attempt); a
  timeout, an error, a refusal, a notice or a too-short answer is then kept as *not a score*.
- A shutdown gives the item in hand back; on start-up ``resume`` continues every unfinished run.
  An answered item is never asked again: its answer and its done state are one transaction.
- Holds are short (``policy.hold``) and renewed every third of it while the executor runs, both
  the items it holds and its connection leases: a process that died lets go within one hold.

Entry points for other parts: ``start`` (the admin API), ``resume`` (start-up), ``scheduled``
(the scheduler's ``suite`` and ``suite-free`` jobs; ``scheduled_free`` is the second by name) and
``for_model`` (onboarding's suite step).
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import time
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import anyio

from benchwarmers_mcp.context import CallInfo, Context
from benchwarmers_mcp.errors import (
    BenchError,
    EmptyAnswer,
    ProviderError,
    RateLimited,
    UpstreamFailure,
    UpstreamTimeout,
)
from benchwarmers_mcp.messages import ModelRequest, user
from benchwarmers_mcp.store import models
from benchwarmers_mcp.store import suite as suite_store
from benchwarmers_mcp.store.suite import AnswerRow, Item
from benchwarmers_mcp.suite import library, scoring
from benchwarmers_mcp.suite.library import Catalog
from benchwarmers_mcp.suite.plan import RunRequest, plan
from benchwarmers_mcp.suite.tasks import Task, TaskProblem

log = logging.getLogger("benchwarmers.suite")
SUITE_CALL = CallInfo(caller="suite", purpose="measurement", key_name="local")


@dataclass(frozen=True)
class RunPolicy:
    timeout: float = 420.0  # one call
    gap: float = 2.0  # between two suite calls on one connection
    retries: int = 3  # more tries after an upstream failure ...
    backoff: float = 5.0  # ... this many seconds times the attempt apart
    rest: float = 1800.0  # after a rate limit that states no wait
    max_rest: float = 86400.0
    sit_out: float = 300.0  # a model cooling down for at most this long is waited for; longer, it rests
    give_up: int = 4  # rests of one model in one run before the run gives up on it
    hold: float = 90.0  # an item or a connection lease is held this long, renewed while its holder runs

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> RunPolicy:
        known = {f.name for f in fields(cls)}
        whole = ("retries", "give_up")
        values: dict[str, Any] = {k: int(v) if k in whole else float(v) for k, v in raw.items() if k in known}
        return cls(**values)


class _Resting(Exception):
    """The model rests (a rate limit, or a cool-down longer than ``sit_out``): give the item back."""

    def __init__(self, wait: float | None, message: str) -> None:
        super().__init__(message)
        self.wait = wait
        self.message = message


def _cooling(error: ProviderError) -> float | None:
    """How long the bench's own cool-down lasts, for a call it refused without sending (a model
    resting after failures or timeouts); None for a failure that came from upstream."""
    return error.retry_after if error.upstream_status is None and error.retry_after is not None else None


@dataclass
class _Worker:
    ctx: Context
    run: int
    connection: str
    holder: str
    policy: RunPolicy
    catalog: Catalog
    repos: dict[str, str]
    resting: dict[str, float] = field(default_factory=dict)  # alias -> when its rest ends

    async def loop(self) -> None:
        db = self.ctx.db
        while await suite_store.run_state(db, self.run) == "running":
            now = time.time()
            waiting = [i for i in await suite_store.items(db, self.run, self.connection) if i.state != "done"]
            if not waiting:
                return
            ready = [i for i in waiting if self._free_at(i) <= now]
            if not ready:
                wake = min(self._free_at(i) for i in waiting)
                await anyio.sleep(min(max(0.05, wake - now), 60.0))
                continue
            item = ready[0]
            if await suite_store.hold_item(db, item.id, self.holder, now + self.policy.hold):
                await self.ask(item)

    def _free_at(self, item: Item) -> float:
        free = max(self.resting.get(item.alias, 0.0), item.rest_until or 0.0)
        if item.state == "asking" and item.holder != self.holder:
            free = max(free, item.held_until or 0.0)
        return free

    async def ask(self, item: Item) -> None:
        """Ask one held item until it is settled or given back; never raises for the model's failures."""
        try:
            row = await self._answer(item)
        except (RateLimited, _Resting) as e:
            await self._rest(item, e.retry_after if isinstance(e, RateLimited) else e.wait, e.message)
            return
        except BaseException:
            with anyio.CancelScope(shield=True):
                await suite_store.release_item(self.ctx.db, item.id, self.holder, error="interrupted")
            raise
        await suite_store.settle_item(self.ctx.db, item, self.holder, row)

    async def _rest(self, item: Item, wait: float | None, message: str) -> None:
        """A rate limit: give the item back and rest its model, or, after ``policy.give_up`` rests of
        the model in this run, keep the item as not a score and leave the model's other items."""
        db = self.ctx.db
        if await suite_store.model_rests(db, self.run, item.alias) + 1 >= self.policy.give_up:
            entry = self.catalog.entries.get(item.task)
            task = entry.task if entry else None
            score = scoring.Score(False, None, "rate limited", task.expects if task else "", detail=message[:300])
            log.info("suite run %s: %s stays rate limited; given up on: %s", self.run, item.alias, message)
            await suite_store.settle_item(db, item, self.holder, _row(item, task, "rate limited", score, error=message),
                                          skip_model=f"not asked: {item.alias} stayed rate limited ({message})")
            return
        wait = wait if wait is not None else self.policy.rest
        until = time.time() + min(max(wait, 1.0), self.policy.max_rest)
        self.resting[item.alias] = until
        log.info("suite run %s: %s rests until %.0f after a rate limit: %s", self.run, item.alias, until, message)
        await suite_store.release_item(db, item.id, self.holder, rest_until=until, error=message)

    async def _answer(self, item: Item) -> AnswerRow:
        entry = self.catalog.entries.get(item.task)
        task = entry.task if entry else None
        if entry is None or task is None:
            why = "the task is gone" if entry is None else f"the task is invalid: {'; '.join(entry.problems)}"
            return _row(item, None, "error", scoring.Score(False, None, "error"), error=why)
        model = await models.find(self.ctx.db, item.alias)
        if model is None or model.retired:
            return _row(item, task, "error", scoring.failure(task, "error", "the model is retired or gone"),
                        error=f"model {item.alias} is retired or gone")
        try:
            prompt = await library.prompt_of(entry, self.repos)
        except TaskProblem as problem:
            return _row(item, task, "error", scoring.failure(task, "error", str(problem)), error=str(problem))
        return await self._call(item, task, model, prompt)

    async def _call(self, item: Item, task: Task, model: models.ModelRecord, prompt: str) -> AnswerRow:
        request = ModelRequest("", (user(prompt),))
        sha = hashlib.sha256(prompt.encode()).hexdigest()[:16]
        attempt = 0
        while True:
            attempt += 1
            started = time.monotonic()
            try:
                async with self._lease():
                    answer = await self.ctx.caller.complete(model, request, timeout=self.policy.timeout,
                                                            info=SUITE_CALL)
            except RateLimited:
                raise
            except UpstreamTimeout as e:
                return _row(item, task, "timeout", scoring.failure(task, "timeout", e.message), error=e.message,
                            seconds=time.monotonic() - started, sha=sha)
            except ProviderError as e:
                if isinstance(e, (UpstreamFailure, EmptyAnswer)) and attempt <= self.policy.retries:
                    cooling = _cooling(e)
                    if cooling is not None and cooling > self.policy.sit_out:
                        raise _Resting(cooling, e.message) from e
                    await anyio.sleep(max(self.policy.backoff * attempt, cooling or 0.0))
                    continue
                return _row(item, task, "error", scoring.failure(task, "error", e.message), error=e.message,
                            seconds=time.monotonic() - started, sha=sha)
            except BenchError as e:
                return _row(item, task, "error", scoring.failure(task, "error", e.message), error=e.message,
                            seconds=time.monotonic() - started, sha=sha)
            usage = answer.usage
            return _row(item, task, "ok" if answer.text.strip() else "empty", scoring.score_answer(task, answer.text),
                        answer=answer.text, seconds=time.monotonic() - started, sha=sha,
                        tokens=(usage.input_tokens, usage.output_tokens) if usage else (0, 0))

    def _lease(self) -> _Lease:
        return _Lease(self)


class _Lease:
    """One suite call on a connection: wait for the lease, hold it, let go with the gap after."""

    def __init__(self, worker: _Worker) -> None:
        self.w = worker

    async def __aenter__(self) -> None:
        w = self.w
        while True:
            until = await suite_store.take_lease(w.ctx.db, w.connection, w.holder, time.time() + w.policy.hold)
            if until is None:
                return
            await anyio.sleep(min(max(0.05, until - time.time()), 60.0))

    async def __aexit__(self, *exc: object) -> None:
        with anyio.CancelScope(shield=True):
            await suite_store.end_lease(self.w.ctx.db, self.w.connection, self.w.holder, time.time() + self.w.policy.gap)


def _row(item: Item, task: Task | None, status: str, score: scoring.Score, *, answer: str = "", error: str = "",
         seconds: float = 0.0, sha: str = "", tokens: tuple[int, int] = (0, 0)) -> AnswerRow:
    return AnswerRow(alias=item.alias, task=item.task, status=status, scored=score.scored, outcome=score.outcome,
                     reason=score.reason, expects=score.expects if task else "", answer=answer, error=error[:1000],
                     seconds=round(seconds, 3), found=score.found, invented=score.invented,
                     invented_claims=score.invented_claims, chances=score.chances, wrong=score.wrong,
                     named_line=score.named_line, prompt_sha=sha, tokens_in=tokens[0], tokens_out=tokens[1],
                     item=item.id, run=item.run)


# ---- entry points ---------------------------------------------------------------------------

async def create(ctx: Context, request: RunRequest, policy: RunPolicy = RunPolicy(), origin: str = "cli") -> int:
    catalog = await library.load(ctx.settings.home)
    items = await plan(ctx.db, request, catalog)
    return await suite_store.create_run(ctx.db, request.as_dict(), policy.as_dict(), items, origin)


async def execute(ctx: Context, run: int) -> None:
    """Ask every open item of a run, then mark it done. Never raises (but for cancellation)."""
    try:
        row = await suite_store.run_row(ctx.db, run)
        if row["state"] != "running":
            return
        policy = RunPolicy.from_dict(row["policy"])
        catalog = await library.load(ctx.settings.home)
        repos = await suite_store.repos(ctx.db)
        holder = secrets.token_hex(8)
        connections = sorted({i.connection for i in await suite_store.items(ctx.db, run) if i.state != "done"})
        async with anyio.create_task_group() as beat:
            beat.start_soon(_renew, ctx, holder, policy.hold)
            async with anyio.create_task_group() as tg:
                for connection in connections:
                    tg.start_soon(_Worker(ctx, run, connection, holder, policy, catalog, repos).loop)
            beat.cancel_scope.cancel()
        if await suite_store.open_items(ctx.db, run) == 0:
            await suite_store.finish_run(ctx.db, run, "done")
    except Exception as e:
        log.exception("suite run %s failed", run)
        with anyio.CancelScope(shield=True):
            await suite_store.finish_run(ctx.db, run, "failed", f"{type(e).__name__}: {e}"[:300])


async def _renew(ctx: Context, holder: str, hold: float) -> None:
    """Keep this executor's holds (items and connection leases) alive while it runs."""
    while True:
        await anyio.sleep(hold / 3)
        await suite_store.renew_holds(ctx.db, holder, time.time() + hold)


async def start(ctx: Context, request: RunRequest, policy: RunPolicy = RunPolicy(), origin: str = "cli") -> int:
    """Plan a run, store it, and ask it in the server's background task group."""
    run = await create(ctx, request, policy, origin)
    ctx.spawn(execute, ctx, run, name=f"suite run {run}")
    return run


async def resume(ctx: Context) -> list[int]:
    """On start-up: continue every unfinished run where it stopped."""
    unfinished = await suite_store.unfinished_runs(ctx.db)
    for run in unfinished:
        ctx.spawn(execute, ctx, run, name=f"suite run {run}")
    return unfinished


async def stop(ctx: Context, run: int) -> bool:
    return await suite_store.finish_run(ctx.db, run, "stopped", "stopped by hand")


BACKGROUND = RunPolicy(gap=120.0)  # the scheduler's pace: two minutes between calls on a connection


async def scheduled(ctx: Context, free_only: bool = False, policy: RunPolicy = BACKGROUND) -> dict[str, Any] | None:
    """The scheduler's ``suite`` (one paid model) and ``suite-free`` (one free model) jobs: plan the
    next model's run and ask it to the end, at the background pace (``BACKGROUND``). None when
    there is no such model or nothing to ask."""
    request = RunRequest(next=not free_only, next_free=free_only)
    try:
        run = await create(ctx, request, policy, "scheduler")
    except BenchError as e:
        log.info("suite %s job: nothing to do (%s)", "free" if free_only else "paid", e.message)
        return None
    await execute(ctx, run)
    return await suite_store.run_row(ctx.db, run)


async def scheduled_free(ctx: Context, policy: RunPolicy = BACKGROUND) -> dict[str, Any] | None:
    """The scheduler's ``suite-free`` job by a name of its own: ``scheduled(ctx, free_only=True)``."""
    return await scheduled(ctx, free_only=True, policy=policy)


ONBOARDING_LIMIT = 3600.0  # onboarding's cap on its suite step when it names none


async def for_model(ctx: Context, alias: str, limit_seconds: float = ONBOARDING_LIMIT,
                    policy: RunPolicy = RunPolicy()) -> dict[str, Any]:
    """Onboarding's suite step: up to six tasks for one model, within ``limit_seconds``; what is not
    asked by then is left (the run is marked stopped, its answers kept). ``scheduled(ctx)`` and
    ``for_model(ctx, alias)`` are how the scheduler and onboarding call them by name."""
    try:
        run = await create(ctx, RunRequest(models=(alias,)), policy, "onboarding")
    except BenchError as e:
        return {"id": None, "state": "nothing", "note": e.message, "items": {}}
    with anyio.move_on_after(limit_seconds) as scope:
        await execute(ctx, run)
    if scope.cancelled_caught:
        await suite_store.finish_run(ctx.db, run, "stopped", f"time limit of {limit_seconds:g} s")
    return await suite_store.run_row(ctx.db, run)
