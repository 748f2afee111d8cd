"""The scheduler: the bench's own jobs at their times, in the server, off until switched on.

Modes (the ``scheduler`` setting, re-read every tick): ``off`` (also when absent: a fresh install
makes no call of its own), ``log-only`` (logs what would run, calls nothing) and ``run``. Jobs are a
plain registry, name -> ``Job(schedule, target)``, the target an async function of the context or a
lazy ``"module:function"`` reference; one that cannot be imported is logged "not available in this
install" and nothing fails. Times are local (the clock's time zone) and each job's can be set.

One runner per data folder: each tick, a process takes (or renews) the ``scheduler`` lease in the
store; only its holder starts scheduled runs. A job never overlaps itself, in any process: its run
is claimed in the store with a heartbeat, and a slot that comes while it runs is logged "skipped
(still going)". A tick finds the slots due in ``(max(last due, switched on, now - 7 days), now]``
and runs only the latest, once ("catching up a run missed while stopped" when over 5 minutes late).
"""

from __future__ import annotations

import importlib
import logging
import re
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

import anyio

from benchwarmers_mcp.clock import Clock, local
from benchwarmers_mcp.context import Context
from benchwarmers_mcp.errors import BadRequest, NotFound
from benchwarmers_mcp.store import scheduler as store
from benchwarmers_mcp.store.scheduler import Claim
from benchwarmers_mcp.upstream.quota import iso

log = logging.getLogger("benchwarmers.scheduler")
JobFn = Callable[[Context], Awaitable[Any]]
MODES = ("off", "log-only", "run")
DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
TICK = 30.0
MAX_RUN = 7200.0
CATCH_UP = 7 * 86400.0
LATE = 300.0
SLOT_RE = re.compile(r"^(?:(mon|tue|wed|thu|fri|sat|sun|daily)\s+)?([01]\d|2[0-3]):([0-5]\d)$")
NOT_AVAILABLE = "not available in this install"


@dataclass(frozen=True)
class Slot:
    hour: int
    minute: int
    weekday: int | None = None  # 0 Monday; None every day

    def text(self) -> str:
        day = "" if self.weekday is None else DAYS[self.weekday] + " "
        return f"{day}{self.hour:02d}:{self.minute:02d}"


def parse_schedule(text: str) -> tuple[Slot, ...]:
    """``"05:00"``, ``"mon 07:00"``, ``"03:00, 09:00, 15:00, 21:00"`` (local time)."""
    slots = []
    for part in (p.strip().lower() for p in text.split(",")):
        match = SLOT_RE.match(part)
        if not match:
            raise BadRequest(f"a schedule is HH:MM or DAY HH:MM (days: {', '.join(DAYS)}), comma-separated;"
                             f" not {part!r}")
        day, hour, minute = match.groups()
        slots.append(Slot(int(hour), int(minute), None if day in (None, "daily") else DAYS.index(day)))
    if not slots:
        raise BadRequest("a schedule needs at least one time")
    return tuple(slots)


def schedule_text(slots: tuple[Slot, ...]) -> str:
    return ", ".join(s.text() for s in slots)


@dataclass(frozen=True)
class Job:
    name: str
    schedule: str
    target: str | JobFn
    about: str = ""

    def resolve(self) -> JobFn | None:
        if not isinstance(self.target, str):
            return self.target
        module, _, name = self.target.partition(":")
        try:
            found = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            return None
        return found if callable(found) else None


JOBS: dict[str, Job] = {job.name: job for job in (
    Job("availability", "05:00", "benchwarmers_mcp.health.jobs:availability", "one tiny call per model"),
    Job("catalog", "06:00", "benchwarmers_mcp.catalog:refresh", "refresh the catalog of model facts"),
    Job("suite-free", "06:00", "benchwarmers_mcp.suite.runner:scheduled_free", "the suite on free models"),
    Job("perf", "mon 07:00", "benchwarmers_mcp.health.jobs:perf", "speed: short and long prompts"),
    Job("capabilities", "sun 07:00", "benchwarmers_mcp.health.jobs:capabilities", "tools and reasoning"),
    Job("deprecations", "08:00", "benchwarmers_mcp.health.jobs:deprecations", "listings, then auto-retire"),
    Job("suite", "03:00, 09:00, 15:00, 21:00", "benchwarmers_mcp.suite.runner:scheduled", "the review suite"),
)}


def _at(day: date, slot: Slot, clock: Clock) -> float:
    """The slot on ``day`` in the clock's zone (the machine's own when it has none), as epoch seconds."""
    moment = datetime(day.year, day.month, day.day, slot.hour, slot.minute)
    return (moment.astimezone() if clock.tz is None else moment.replace(tzinfo=clock.tz)).timestamp()


def _slots_on(slots: tuple[Slot, ...], day: date, clock: Clock) -> list[float]:
    return sorted(_at(day, s, clock) for s in slots if s.weekday in (None, day.weekday()))


def due_slot(slots: tuple[Slot, ...], start: float, now: float, clock: Clock) -> float | None:
    """The latest slot in ``(start, now]``, as epoch seconds, or None."""
    if now <= start:
        return None
    day, first = local(clock, now).date(), local(clock, start).date()
    while day >= first:
        found = [t for t in _slots_on(slots, day, clock) if start < t <= now]
        if found:
            return found[-1]
        day -= timedelta(days=1)
    return None


def next_slot(slots: tuple[Slot, ...], now: float, clock: Clock) -> float:
    day = local(clock, now).date()
    for _ in range(9):
        later = [t for t in _slots_on(slots, day, clock) if t > now]
        if later:
            return later[0]
        day += timedelta(days=1)
    raise AssertionError("a schedule always has a slot within a week")


@dataclass(frozen=True)
class Config:
    """The ``scheduler`` setting: mode, jobs switched off, times changed, when it was switched on."""

    mode: str = "off"
    off: tuple[str, ...] = ()
    times: dict[str, str] = field(default_factory=dict)
    since: float | None = None  # when it was last switched on: slots before it are not made up

    @classmethod
    def of(cls, raw: dict[str, Any]) -> Config:
        mode = str(raw.get("mode")) if raw.get("mode") in MODES else "off"
        return cls(mode, tuple(raw.get("off") or ()), dict(raw.get("times") or {}), raw.get("since"))

    def as_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "off": list(self.off), "times": self.times, "since": self.since}

    def slots(self, job: Job) -> tuple[Slot, ...]:
        return parse_schedule(self.times.get(job.name) or job.schedule)


async def config(ctx: Context) -> Config:
    return Config.of(await store.settings(ctx.db))


async def change(ctx: Context, jobs: dict[str, Job], *, mode: str | None = None,
                 off: list[str] | None = None, on: list[str] | None = None,
                 times: dict[str, str | None] | None = None) -> Config:
    """Change the setting: the mode, jobs off or back on, a job's times (None: its default)."""
    current = await config(ctx)
    if mode is not None and mode not in MODES:
        raise BadRequest(f"mode is one of {', '.join(MODES)}")
    named = [*(off or []), *(on or []), *(times or {})]
    unknown = [n for n in named if n not in jobs]
    if unknown:
        raise NotFound(f"no job named {', '.join(unknown)}; jobs: {', '.join(jobs)}")
    for text in (times or {}).values():
        if text:
            parse_schedule(text)
    switched = set(current.off) | set(off or [])
    switched -= set(on or [])
    new_times = {**current.times, **{k: v for k, v in (times or {}).items() if v}}
    for name, text in (times or {}).items():
        if not text:
            new_times.pop(name, None)
    new_mode = mode or current.mode
    since = current.since
    if new_mode != "off" and (current.mode == "off" or since is None):
        since = ctx.clock.now()
    new = Config(new_mode, tuple(sorted(switched)), new_times, since)
    await store.save_settings(ctx.db, new.as_dict())
    return new


class Scheduler:
    """One per process; only the lease holder starts scheduled runs."""

    def __init__(self, ctx: Context, jobs: dict[str, Job] | None = None, *, tick: float = TICK,
                 max_run: float = MAX_RUN) -> None:
        self.ctx = ctx
        self.clock = ctx.clock
        self.jobs = dict(JOBS if jobs is None else jobs)
        self.tick_every = tick
        self.max_run = max_run
        self.owner = f"{uuid.uuid4().hex[:12]}"
        self.lease_ttl = max(3 * tick, 90.0)
        self.stale = max(3 * tick, 90.0)  # a run with no heartbeat this long is lost

    async def run_forever(self) -> None:
        while True:
            try:
                await self.tick()
            except Exception:  # a bad tick is logged; the next one tries again
                log.exception("scheduler tick failed")
            await self.clock.sleep(self.tick_every)

    async def tick(self) -> list[str]:
        """One look: returns what it started or logged (for tests and logs)."""
        cfg = await config(self.ctx)
        if cfg.mode == "off":
            return []
        now = self.clock.now()
        if not await store.take_lease(self.ctx.db, "scheduler", self.owner, now, self.lease_ttl):
            return []
        states = await store.job_states(self.ctx.db)
        done = []
        for job in self.jobs.values():
            if job.name in cfg.off:
                continue
            state = states.get(job.name)
            start = max(state.last_due if state and state.last_due else 0.0, cfg.since or now, now - CATCH_UP)
            due = due_slot(cfg.slots(job), start, now, self.clock)
            if due is None:
                continue
            late = now - due > LATE
            note = "catching up a run missed while stopped" if late else ""
            if cfg.mode == "log-only":
                if await store.mark_due(self.ctx.db, job.name, due):
                    await store.log_run(self.ctx.db, job.name, due=due, now=now, status="would run",
                                        trigger="schedule", note=note, owner=self.owner)
                    done.append(f"would run {job.name}")
                continue
            claim = await store.claim(self.ctx.db, job.name, owner=self.owner, now=now, due=due, stale=self.stale,
                                      trigger="schedule", note=note)
            if claim.run is not None:
                self.ctx.spawn(self._run, job, claim, name=f"job {job.name}")
                done.append(f"started {job.name}")
            elif claim.busy is not None:
                done.append(f"skipped {job.name} (still going)")
        return done

    async def run_now(self, name: str) -> int:
        """Start ``name`` now, whatever the mode (the user asked); refused while it runs. Returns the run id."""
        job = self.jobs.get(name)
        if job is None:
            raise NotFound(f"no job named {name!r}; jobs: {', '.join(self.jobs)}")
        claim = await store.claim(self.ctx.db, name, owner=self.owner, now=self.clock.now(), due=None,
                                  stale=self.stale, trigger="now")
        if claim.run is None:
            raise BadRequest(f"{name} is running now (run {claim.busy.running_run if claim.busy else '?'});"
                             " it never overlaps itself")
        self.ctx.spawn(self._run, job, claim, name=f"job {job.name}")
        return claim.run

    async def finished(self, run_id: int, poll: float = 0.2) -> store.Run | None:
        """Until a run has finished (real time: a job's calls take real time whatever the clock)."""
        while True:
            found = await store.run(self.ctx.db, run_id)
            if found is None or found.finished is not None:
                return found
            await anyio.sleep(poll)

    async def wait(self, run_id: int) -> dict[str, Any] | None:
        """``finished`` as the admin API shows a run."""
        done = await self.finished(run_id)
        return run_view(done) if done else None

    async def configure(self, *, mode: str | None = None, off: list[str] | None = None, on: list[str] | None = None,
                        times: dict[str, str | None] | None = None) -> dict[str, Any]:
        """Change the setting (``change``); the overview after it."""
        await change(self.ctx, self.jobs, mode=mode, off=off, on=on, times=times)
        return await self.overview()

    async def _run(self, job: Job, claim: Claim) -> None:
        assert claim.run is not None
        run = claim.run
        fn = job.resolve()
        if fn is None:
            await store.finish(self.ctx.db, job.name, run, now=self.clock.now(), status="not available",
                               note=NOT_AVAILABLE)
            return
        status, note, detail = "ran", "", None
        started = anyio.current_time()
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._beat, job.name, run)
                with anyio.fail_after(self.max_run):
                    result = await fn(self.ctx)
                tg.cancel_scope.cancel()
            detail = result if isinstance(result, dict) else {"result": result}
        except TimeoutError:
            status, note = "failed", f"stopped after {self.max_run:g} s"
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await store.finish(self.ctx.db, job.name, run, now=self.clock.now(), status="cancelled",
                                   note="the server stopped")
            raise
        except Exception as e:  # a job's failure is its run's outcome, logged, never the scheduler's
            status, note = "failed", f"{type(e).__name__}: {e}"[:1000]
            log.warning("job %s failed: %s", job.name, note)
        seconds = anyio.current_time() - started
        await store.finish(self.ctx.db, job.name, run, now=self.clock.now(), status=status,
                           note=note or f"{seconds:.1f} s", detail=detail)

    async def _beat(self, name: str, run: int) -> None:
        while True:
            await store.heartbeat(self.ctx.db, name, run, self.clock.now())
            await anyio.sleep(min(self.tick_every, self.stale / 3))

    async def overview(self) -> dict[str, Any]:
        return await overview(self.ctx, self.jobs)


async def overview(ctx: Context, jobs: dict[str, Job]) -> dict[str, Any]:
    """Mode, each job (schedule, on, running, last run, next run) and the latest runs."""
    clock = ctx.clock
    cfg = await config(ctx)
    states = await store.job_states(ctx.db)
    last = await store.last_runs(ctx.db)
    now = clock.now()
    out = []
    for job in jobs.values():
        slots = cfg.slots(job)
        state = states.get(job.name)
        latest = last.get(job.name)
        on = cfg.mode != "off" and job.name not in cfg.off
        out.append({"name": job.name, "about": job.about, "schedule": schedule_text(slots),
                    "default_schedule": job.schedule, "on": job.name not in cfg.off, "available": job.resolve() is not None,
                    "running": bool(state and state.running_run), "next_run": iso(next_slot(slots, now, clock)) if on else None,
                    "last_run": run_view(latest) if latest else None})
    lease = await store.lease(ctx.db, "scheduler")
    return {"mode": cfg.mode, "since": iso(cfg.since), "jobs": out,
            "runner": {"owner": lease["owner"], "expires": iso(lease["expires"])} if lease else None,
            "runs": [run_view(r) for r in await store.runs(ctx.db, limit=30)]}


def run_view(r: store.Run) -> dict[str, Any]:
    return {"id": r.id, "job": r.job, "status": r.status, "trigger": r.trigger, "due": iso(r.due), "at": iso(r.at),
            "finished": iso(r.finished), "note": r.note, "detail": r.detail}
