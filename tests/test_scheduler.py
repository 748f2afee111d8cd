"""Issue 16.4: the scheduler is off on a fresh install (no upstream call of its own), logs in
log-only mode, runs a job once across two processes on one data folder, catches up the latest
missed slot once after a restart, never overlaps a job with itself, and logs every run."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import anyio
import httpx
import pytest

from benchwarmers_mcp import backups, catalog
from benchwarmers_mcp import scheduler as sched
from benchwarmers_mcp.health import jobs
from benchwarmers_mcp.scheduler import NOT_AVAILABLE, Job, Scheduler, due_slot, parse_schedule
from benchwarmers_mcp.settings import Settings
from benchwarmers_mcp.store import endpoints, models
from benchwarmers_mcp.store import scheduler as sched_store
from benchwarmers_mcp.store.endpoints import Endpoint
from benchwarmers_mcp.store.models import ModelRecord
from benchwarmers_mcp.suite import runner
from tests.fakes.openai_upstream import FakeUpstream
from tests.kits.health import ManualClock, Running, Scripted, at_utc, health_ctx, running_app
from tests.kits.loopback import Loopback

pytestmark = pytest.mark.anyio
ALL_BUT_AVAILABILITY = [n for n in sched.JOBS if n != "availability"]


def utc(*args: int) -> float:
    return datetime(*args, tzinfo=UTC).timestamp()


def test_slots_are_read_in_local_time_and_only_the_latest_is_due() -> None:
    clock = ManualClock()
    daily, monday = parse_schedule("05:00"), parse_schedule("mon 07:00")
    start, now = utc(2026, 3, 1, 12), utc(2026, 3, 5, 6)  # Sunday noon to Thursday 06:00
    assert due_slot(daily, start, now, clock) == utc(2026, 3, 5, 5)
    assert due_slot(monday, start, now, clock) == utc(2026, 3, 2, 7)
    assert due_slot(daily, utc(2026, 3, 5, 5), now, clock) is None
    assert parse_schedule("03:00, 09:00") == (sched.Slot(3, 0), sched.Slot(9, 0))
    with pytest.raises(Exception, match="HH:MM"):
        parse_schedule("25:00")


@pytest.fixture
def fake_base(fake: FakeUpstream, net: Loopback) -> str:
    """The fake OpenAI-compatible upstream on the test's loopback; its /v1 base URL."""
    fake.served = ["alpha"]
    return net.serve(fake.app()) + "/v1"


def bench_app(settings: Settings, net: Loopback, clock: ManualClock):
    """The app in-process (scheduler running on ``clock``), its upstream calls reaching what ``net`` serves."""
    return running_app(settings, clock, net.transport(httpx))


async def seat_on(run: Running, base: str) -> None:
    db = run.ctx.db
    await endpoints.add(db, Endpoint("fake", base))
    await models.register(db, ModelRecord("alpha", "alpha", "fake", "alpha"))


async def runs_of(db, job: str | None = None) -> list[sched_store.Run]:
    return await sched_store.runs(db, job=job, limit=1000)


async def finished(db, job: str, count: int) -> list[sched_store.Run]:
    with anyio.fail_after(60):
        while True:
            done = [r for r in await runs_of(db, job) if r.finished is not None and r.status != "skipped"]
            if len(done) >= count:
                return done
            await anyio.sleep(0.02)


async def test_a_fresh_server_makes_no_upstream_call_on_its_own(settings: Settings, net: Loopback, fake: FakeUpstream,
                                                              fake_base: str) -> None:
    clock = ManualClock()
    async with bench_app(settings, net, clock) as run:
        await seat_on(run, fake_base)
        for _ in range(8 * 24):  # eight days, past every job's slot, an hour at a time
            await clock.advance(3600)
        overview = (await run.client.get("/api/scheduler")).json()
        assert overview["mode"] == "off" and all(j["next_run"] is None for j in overview["jobs"])
        assert overview["runner"] is None  # off: no process even takes the lease
        assert await runs_of(run.ctx.db) == []
    assert fake.count() == 0


async def test_log_only_logs_what_would_run_and_calls_nothing(settings: Settings, net: Loopback, fake: FakeUpstream,
                                                              fake_base: str) -> None:
    clock = ManualClock()
    async with bench_app(settings, net, clock) as run:
        await seat_on(run, fake_base)
        assert (await run.client.post("/api/scheduler", json={"mode": "log-only"})).status_code == 200
        await clock.advance(at_utc(clock, 5, 30) - clock.now())
        runs = await runs_of(run.ctx.db, "availability")
        assert [r.status for r in runs] == ["would run"]
    assert fake.count() == 0


async def test_two_processes_on_one_data_folder_run_a_job_once(settings: Settings, net: Loopback, fake: FakeUpstream,
                                                               fake_base: str) -> None:
    clock = ManualClock()
    async with bench_app(settings, net, clock) as one, bench_app(settings, net, clock) as two:
        assert one.scheduler.owner != two.scheduler.owner
        await seat_on(one, fake_base)
        await one.client.post("/api/scheduler", json={"mode": "run", "off": ALL_BUT_AVAILABILITY})
        await clock.advance(at_utc(clock, 5, 1) - clock.now())
        [done] = await finished(one.ctx.db, "availability", 1)
        await clock.advance(600)
        assert done.status == "ran" and done.detail["probed"] == 1
        assert len(await runs_of(two.ctx.db, "availability")) == 1
        lease = (await two.client.get("/api/scheduler")).json()["runner"]
        assert lease["owner"] in (one.scheduler.owner, two.scheduler.owner)
    assert fake.count("alpha") == 1


async def test_the_latest_missed_slot_is_made_up_once_after_a_restart(settings: Settings, net: Loopback,
                                                                       fake: FakeUpstream, fake_base: str) -> None:
    clock = ManualClock()
    async with bench_app(settings, net, clock) as run:
        await seat_on(run, fake_base)
        await run.client.post("/api/scheduler", json={"mode": "run", "off": ALL_BUT_AVAILABILITY})
        await clock.advance(at_utc(clock, 5, 1) - clock.now())
        await finished(run.ctx.db, "availability", 1)
    latest = at_utc(clock, 5, 0, days=2)
    clock.set(latest + 4 * 3600)  # stopped over three 05:00 slots
    async with bench_app(settings, net, clock) as run:
        await finished(run.ctx.db, "availability", 2)
        await clock.advance(3600)
        await clock.advance(3600)
        runs = await runs_of(run.ctx.db, "availability")
        assert len(runs) == 2 and runs[0].due == latest and "catching up" in runs[0].note
    assert fake.count("alpha") == 2


async def test_a_job_never_overlaps_itself(home: Path) -> None:
    clock = ManualClock(utc(2026, 3, 2, 0, 30))
    release, calls = anyio.Event(), []

    async def slow(ctx) -> dict:
        calls.append(clock.now())
        await release.wait()
        return {"done": True}

    hourly = ", ".join(f"{h:02d}:00" for h in range(24))
    async with health_ctx(home, Scripted(), clock) as ctx:
        s = Scheduler(ctx, {"slow": Job("slow", hourly, slow)})
        await sched.change(ctx, s.jobs, mode="run")
        await clock.advance(3600)
        assert await s.tick() == ["started slow"]
        await clock.advance(3600)
        assert await s.tick() == ["skipped slow (still going)"]
        with pytest.raises(Exception, match="never overlaps"):
            await s.run_now("slow")
        release.set()
        [done] = await finished(ctx.db, "slow", 1)
        statuses = [r.status for r in await runs_of(ctx.db, "slow")]
    assert len(calls) == 1 and done.status == "ran" and statuses == ["skipped", "ran"]


async def test_a_job_whose_target_is_not_installed_is_logged_not_failed(home: Path) -> None:
    clock = ManualClock()
    async with health_ctx(home, Scripted(), clock) as ctx:
        s = Scheduler(ctx, {"catalog": Job("catalog", "06:00", "benchwarmers_mcp.no_such_module:refresh")})
        run_id = await s.run_now("catalog")
        done = await s.wait(run_id)
        assert done is not None and done["status"] == "not available" and done["note"] == NOT_AVAILABLE
        overview = await s.overview()
        assert overview["jobs"][0]["available"] is False


async def test_settings_switch_jobs_off_and_move_their_times(home: Path) -> None:
    clock = ManualClock()
    async with health_ctx(home, Scripted(), clock) as ctx:
        cfg = await sched.change(ctx, sched.JOBS, mode="run", off=["perf"], times={"availability": "04:30"})
        assert cfg.mode == "run" and cfg.off == ("perf",) and cfg.since == clock.now()
        overview = await sched.overview(ctx, sched.JOBS)
        jobs = {j["name"]: j for j in overview["jobs"]}
        assert jobs["availability"]["schedule"] == "04:30" and jobs["perf"]["on"] is False
        assert jobs["perf"]["next_run"] is None and jobs["availability"]["next_run"] is not None
        cfg = await sched.change(ctx, sched.JOBS, on=["perf"], times={"availability": None})
        assert cfg.off == () and cfg.times == {}
        with pytest.raises(Exception, match="no job named"):
            await sched.change(ctx, sched.JOBS, off=["nope"])


def test_every_job_is_wired_to_its_code_in_this_install() -> None:
    """The reference's jobs and times, each resolving to the function that does it (a renamed one
    would quietly become "not available in this install")."""
    wired = {name: (job.schedule, job.resolve()) for name, job in sched.JOBS.items()}
    assert wired == {
        "availability": ("05:00", jobs.availability), "catalog": ("06:00", catalog.refresh),
        "suite-free": ("06:00", runner.scheduled_free), "perf": ("mon 07:00", jobs.perf),
        "capabilities": ("sun 07:00", jobs.capabilities), "deprecations": ("08:00", jobs.deprecations),
        "suite": ("03:00, 09:00, 15:00, 21:00", runner.scheduled), "backup": ("04:00", backups.scheduled)}
